package selector

import (
	"strings"
	"testing"
)

func TestMatches(t *testing.T) {
	type obj struct {
		ns, name string
		labels   map[string]string
	}
	web := obj{"apps", "web", map[string]string{"app": "web", "tier": "front"}}
	db := obj{"data", "web-db", map[string]string{"app": "db"}}
	flux := obj{"flux-system", "podinfo", nil}
	tests := map[string]struct {
		sel  string
		want map[string]bool
	}{
		"name any namespace": {"web", map[string]bool{"web": true}},
		"namespace/name":     {"data/web-db", map[string]bool{"web-db": true}},
		"wrong namespace":    {"apps/web-db", map[string]bool{}},
		"namespace glob":     {"flux-system/*", map[string]bool{"podinfo": true}},
		"name glob":          {"web*", map[string]bool{"web": true, "web-db": true}},
		"both globs":         {"*/*", map[string]bool{"web": true, "web-db": true, "podinfo": true}},
		"char class":         {"[a-d]*/*", map[string]bool{"web": true, "web-db": true}},
		"label equals":       {"label:app=web", map[string]bool{"web": true}},
		"label set":          {"label:app in (web,db)", map[string]bool{"web": true, "web-db": true}},
		"label not":          {"label:app!=web", map[string]bool{"web-db": true, "podinfo": true}},
		"label exists":       {"label:tier", map[string]bool{"web": true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Parse(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []obj{web, db, flux} {
				if got := s.Matches(o.ns, o.name, o.labels); got != tc.want[o.name] {
					t.Errorf("%q matches %s/%s = %v, want %v", tc.sel, o.ns, o.name, got, tc.want[o.name])
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]string{
		"":                "empty selector",
		"a/b/c":           `more than one "/"`,
		"Web":             `"Web" is not a valid name`,
		"Flux/web":        `"Flux" is not a valid namespace`,
		"ns/":             "empty name",
		"/web":            "empty namespace",
		"web[":            "malformed glob",
		"WEB*":            "glob \"WEB*\" may hold only",
		"label:":          "empty label selector",
		"label:app in (a": "invalid label selector",
		"label:=x":        "invalid label selector",
		"under_score":     "is not a valid name",
	}
	for sel, want := range tests {
		t.Run(sel, func(t *testing.T) {
			_, err := Parse(sel)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Parse(%q) error = %v, want one containing %q", sel, err, want)
			}
		})
	}
}
