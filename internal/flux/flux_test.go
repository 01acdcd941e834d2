package flux

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestShortenName(t *testing.T) {
	long := strings.Repeat("a", 30) + "-" + strings.Repeat("b", 30)
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(long)))
	tests := map[string]string{
		"web":                   "web",
		strings.Repeat("x", 53): strings.Repeat("x", 53),
		long:                    long[:40] + "-" + sum[:12],
	}
	for in, want := range tests {
		if got := ShortenName(in); got != want || len(got) > 53 {
			t.Errorf("ShortenName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReleaseName: the rule is helm-controller's own (its api/v2 GetReleaseName, shortened as
// its release package does), for every combination of the fields it reads.
func TestReleaseName(t *testing.T) {
	long := strings.Repeat("component", 7)
	for _, tc := range []struct{ name, releaseName, target, want string }{
		{"web", "", "", "web"},
		{"web", "", "apps", "apps-web"},
		{"web", "shop", "apps", "shop"},
		{long, "", "apps", ShortenName("apps-" + long)},
	} {
		hr := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: v2.HelmReleaseSpec{ReleaseName: tc.releaseName, TargetNamespace: tc.target}}
		got := ReleaseName(tc.name, tc.releaseName, tc.target)
		if got != tc.want || got != ShortenName(hr.GetReleaseName()) {
			t.Errorf("ReleaseName(%q, %q, %q) = %q, want %q (helm-controller: %q)", tc.name, tc.releaseName, tc.target, got, tc.want, ShortenName(hr.GetReleaseName()))
		}
	}
}

// TestIgnoreRules: the typed ignore rules of helm-controller's API and their unstructured form
// read the same; nil is none; a malformed one is an error naming the field.
func TestIgnoreRules(t *testing.T) {
	typed := []v2.IgnoreRule{{Paths: []string{"/spec/replicas"}}}
	unstructured := []any{map[string]any{"paths": []any{"/spec/replicas"}}}
	for _, in := range []any{typed, unstructured} {
		rules, err := IgnoreRules(in)
		if err != nil || len(rules) != 1 || rules[0].Paths[0] != "/spec/replicas" || rules[0].Target != nil {
			t.Errorf("IgnoreRules(%T) = %+v, %v", in, rules, err)
		}
	}
	if rules, err := IgnoreRules(nil); rules != nil || err != nil {
		t.Errorf("IgnoreRules(nil) = %v, %v", rules, err)
	}
	if _, err := IgnoreRules("not a list"); err == nil || !strings.Contains(err.Error(), "spec.driftDetection.ignore") {
		t.Errorf("a malformed ignore: %v", err)
	}
}

func TestValidatePointer(t *testing.T) {
	for _, ok := range []string{"", "/", "/spec/replicas", "/metadata/annotations/a~1b", "/a~0b"} {
		if err := ValidatePointer(ok); err != nil {
			t.Errorf("ValidatePointer(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"spec", "/a~", "/a~2", "~1"} {
		if err := ValidatePointer(bad); err == nil {
			t.Errorf("ValidatePointer(%q) accepted", bad)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, ok := range []string{"enabled", "warn", "disabled"} {
		if m, err := ParseMode(ok); err != nil || string(m) != ok {
			t.Errorf("ParseMode(%q) = %q, %v", ok, m, err)
		}
	}
	if _, err := ParseMode("true"); err == nil || !strings.Contains(err.Error(), "booleans") {
		t.Errorf("ParseMode(true): %v", err)
	}
}
