package transform

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

func mustRule(t *testing.T, v string) Rule {
	t.Helper()
	r, err := ParseFlagRule(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, f *DriftDetection, in string) (string, error) {
	t.Helper()
	s, err := manifest.Split([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Transform(s); err != nil {
		return "", err
	}
	out, err := s.Bytes()
	return string(out), err
}

const hr = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: apps
  labels:
    tier: front
spec:
  interval: 5m
`

func TestDriftDetection(t *testing.T) {
	yes, no := true, false
	tests := map[string]struct {
		rules []string
		edit  func([]Rule)
		in    string
		want  string
	}{
		"selected": {
			rules: []string{"web=enabled"},
			in:    hr,
			want:  hr + "  driftDetection:\n    mode: enabled\n",
		},
		"later rule wins": {
			rules: []string{"apps/*=enabled", "label:tier=front=warn"},
			in:    hr,
			want:  hr + "  driftDetection:\n    mode: warn\n",
		},
		"not selected": {
			rules: []string{"other/web=enabled"},
			in:    hr,
			want:  hr,
		},
		"ignore carried from an earlier rule": {
			rules: []string{"web=enabled", "apps/web=disabled"},
			edit: func(r []Rule) {
				r[0].Ignore = []flux.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &flux.Target{Kind: "Deployment"}}}
			},
			in:   hr,
			want: hr + "  driftDetection:\n    mode: disabled\n    ignore:\n    - paths:\n      - /spec/replicas\n      target:\n        kind: Deployment\n",
		},
		"chart's kept": {
			rules: []string{"web=enabled"},
			in:    hr + "  driftDetection:\n    mode: warn\n",
			want:  hr + "  driftDetection:\n    mode: warn\n",
		},
		"chart's overridden in place": {
			rules: []string{"web=enabled"},
			edit:  func(r []Rule) { r[0].Override = &yes },
			in:    hr + "  driftDetection:\n    mode: warn\n  timeout: 5m\n",
			want:  hr + "  driftDetection:\n    mode: enabled\n  timeout: 5m\n",
		},
		"override false from a later rule": {
			rules: []string{"web=enabled", "web=disabled"},
			edit:  func(r []Rule) { r[0].Override = &yes; r[1].Override = &no },
			in:    hr + "  driftDetection:\n    mode: warn\n",
			want:  hr + "  driftDetection:\n    mode: warn\n",
		},
		"other group's HelmRelease untouched": {
			rules: []string{"web=enabled", "x=warn"},
			in:    strings.Replace(hr, "helm.toolkit.fluxcd.io/v2", "helm.cattle.io/v1", 1) + "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: x\nspec: {}\n",
			want:  strings.Replace(hr, "helm.toolkit.fluxcd.io/v2", "helm.cattle.io/v1", 1) + "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: x\nspec: {driftDetection: {mode: warn}}\n",
		},
		"v2beta2": {
			rules: []string{"web=warn"},
			in:    strings.Replace(hr, "/v2\n", "/v2beta2\n", 1),
			want:  strings.Replace(hr, "/v2\n", "/v2beta2\n", 1) + "  driftDetection:\n    mode: warn\n",
		},
		"quoted kind and name": {
			rules: []string{"apps/web=enabled"},
			in:    "apiVersion: \"helm.toolkit.fluxcd.io/v2\"\nkind: 'HelmRelease'\nmetadata: {name: \"web\", namespace: apps}\nspec:\n  interval: 5m\n",
			want:  "apiVersion: \"helm.toolkit.fluxcd.io/v2\"\nkind: 'HelmRelease'\nmetadata: {name: \"web\", namespace: apps}\nspec:\n  interval: 5m\n  driftDetection:\n    mode: enabled\n",
		},
		"labels through an alias": {
			rules: []string{"label:tier=db=enabled"},
			in:    "x-labels: &l {tier: db}\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: db\n  labels: *l\nspec:\n  interval: 5m\n",
			want:  "x-labels: &l {tier: db}\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: db\n  labels: *l\nspec:\n  interval: 5m\n  driftDetection:\n    mode: enabled\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var rules []Rule
			for _, r := range tc.rules {
				rules = append(rules, mustRule(t, r))
			}
			if tc.edit != nil {
				tc.edit(rules)
			}
			var log bytes.Buffer
			got, err := run(t, &DriftDetection{Rules: rules, Namespace: "default", Log: &log}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nlog:\n%s", diff, log.String())
			}
		})
	}
}

func TestDriftDetectionErrors(t *testing.T) {
	tests := map[string]struct {
		rule, in, want string
	}{
		"v2beta1":       {"web=enabled", strings.Replace(hr, "/v2\n", "/v2beta1\n", 1), "v2beta1 has no spec.driftDetection"},
		"no spec":       {"web=enabled", strings.Replace(hr, "spec:\n  interval: 5m\n", "", 1), "HelmRelease apps/web: has no spec"},
		"spec scalar":   {"web=enabled", strings.Replace(hr, "spec:\n  interval: 5m\n", "spec: nope\n", 1), "spec is a scalar, not a mapping"},
		"spec null":     {"web=enabled", strings.Replace(hr, "spec:\n  interval: 5m\n", "spec:\n", 1), "spec is null, not a mapping"},
		"duplicate key": {"web=enabled", hr + "  interval: 1m\n", `mapping key "interval" at spec is defined twice`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, &DriftDetection{Rules: []Rule{mustRule(t, tc.rule)}}, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNoMatch(t *testing.T) {
	var log bytes.Buffer
	f := &DriftDetection{Rules: []Rule{mustRule(t, "nothing=enabled")}, Log: &log}
	if _, err := run(t, f, hr); err != nil {
		t.Fatal(err)
	}
	if want := "helm-drift: warning: --drift-detection nothing=enabled matched no HelmRelease\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	f.Strict = true
	if _, err := run(t, f, hr); err == nil || !strings.Contains(err.Error(), "matched no HelmRelease") {
		t.Errorf("strict: error %v", err)
	}
}

func TestParseFlagRule(t *testing.T) {
	tests := map[string]string{
		"web":            "want SELECTOR=MODE",
		"web=":           `unknown drift detection mode ""`,
		"web=Enabled":    `unknown drift detection mode "Enabled"`,
		"=enabled":       "empty selector",
		"label:app=web":  `unknown drift detection mode "web"`,
		"a/b/c=enabled":  `more than one "/"`,
		"label:a=(=warn": "invalid label selector",
	}
	for v, want := range tests {
		if _, err := ParseFlagRule(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFlagRule(%q) = %v, want an error containing %q", v, err, want)
		}
	}
	r, err := ParseFlagRule("label:app=web=enabled")
	if err != nil || r.Selector.String() != "label:app=web" || r.Mode != flux.ModeEnabled {
		t.Errorf("ParseFlagRule(label:app=web=enabled) = %+v, %v", r, err)
	}
}

// TestIgnoreFrom: the rules IgnoreFrom gives are added after the rules' own, its notes and its
// error are warnings (the render goes on without its rules), it is asked where the HelmRelease's
// release is, and never for a HelmRelease set to disabled.
func TestIgnoreFrom(t *testing.T) {
	own := flux.IgnoreRule{Paths: []string{"/spec/own"}}
	fromCluster := flux.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &flux.Target{Group: "apps", Kind: "Deployment", Name: "web"}}
	var asked []HelmReleaseRef
	var log strings.Builder
	rule := mustRule(t, "apps/web=enabled")
	rule.Ignore = []flux.IgnoreRule{own}
	f := &DriftDetection{Rules: []Rule{rule}, Log: &log, IgnoreFrom: func(ref HelmReleaseRef) ([]flux.IgnoreRule, []string, error) {
		asked = append(asked, ref)
		return []flux.IgnoreRule{fromCluster}, []string{"added ignore rule /spec/replicas"}, nil
	}}
	in := strings.Replace(hr, "interval: 5m", "interval: 5m\n  releaseName: front\n  targetNamespace: web-apps", 1)
	out, err := run(t, f, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Applied) != 1 || len(f.Applied[0].Ignore) != 2 || f.Applied[0].Ignore[0].Paths[0] != "/spec/own" || f.Applied[0].Ignore[1].Paths[0] != "/spec/replicas" {
		t.Errorf("applied %+v, want the rule's own ignore, then the cluster's\n%s", f.Applied, out)
	}
	if want := (HelmReleaseRef{Namespace: "apps", Name: "web", ReleaseName: "front", TargetNamespace: "web-apps"}); len(asked) != 1 || asked[0] != want {
		t.Errorf("asked %+v, want %+v", asked, want)
	}
	if !strings.Contains(log.String(), "warning: document 1 (line 1), HelmRelease apps/web: --ignore-from-cluster: added ignore rule /spec/replicas") {
		t.Errorf("the note is not a warning: %q", log.String())
	}

	log.Reset()
	f = &DriftDetection{Rules: []Rule{mustRule(t, "apps/web=enabled")}, Log: &log, IgnoreFrom: func(HelmReleaseRef) ([]flux.IgnoreRule, []string, error) {
		return nil, nil, errors.New("cluster unreachable")
	}}
	if out, err := run(t, f, hr); err != nil || !strings.Contains(out, "mode: enabled") || strings.Contains(out, "ignore:") {
		t.Errorf("an IgnoreFrom error failed the render or added rules: %v\n%s", err, out)
	}
	if !strings.Contains(log.String(), "cluster unreachable; no rule added from the cluster") {
		t.Errorf("the error is not a warning: %q", log.String())
	}

	f = &DriftDetection{Rules: []Rule{mustRule(t, "apps/web=disabled")}, IgnoreFrom: func(HelmReleaseRef) ([]flux.IgnoreRule, []string, error) {
		t.Error("asked for a HelmRelease set to disabled")
		return nil, nil, nil
	}}
	run(t, f, hr)
}
