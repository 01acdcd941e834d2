package transform

import (
	"strings"
	"testing"
)

func TestSplitChartLabel(t *testing.T) {
	tests := map[string][2]string{
		"platform-1.4.2":               {"platform", "1.4.2"},
		"kube-prometheus-stack-65.1.0": {"kube-prometheus-stack", "65.1.0"},
		"app-1.0.0-rc.1":               {"app", "1.0.0-rc.1"},
		"app-2-1.0.0":                  {"app-2", "1.0.0"},
		"app-1.0.0_build.5":            {"app", "1.0.0+build.5"},
	}
	for label, want := range tests {
		name, version, ok := splitChartLabel(label)
		if !ok || name != want[0] || version != want[1] {
			t.Errorf("splitChartLabel(%q) = %q, %q, %v; want %q, %q", label, name, version, ok, want[0], want[1])
		}
	}
	for _, bad := range []string{"platform", "platform-latest", "-1.0.0"} {
		if _, _, ok := splitChartLabel(bad); ok {
			t.Errorf("splitChartLabel(%q) accepted", bad)
		}
	}
}

func TestSelfValidate(t *testing.T) {
	tests := map[string]struct {
		s    Self
		want string
	}{
		"no release":   {Self{Namespace: "n", Repository: "oci://r/c"}, "--self needs --release"},
		"not oci":      {Self{Release: "r", Namespace: "n", Repository: "https://r/c"}, "want an OCI repository"},
		"bad interval": {Self{Release: "r", Namespace: "n", Repository: "oci://r/c", Interval: "soon"}, "--self-interval"},
		"bad version":  {Self{Release: "r", Namespace: "n", Repository: "oci://r/c", ChartVersion: "v1"}, "not a semantic version"},
		"fine":         {Self{Release: "r", Namespace: "n", Repository: "oci://r/c", VersionRange: ">=1.0.0 <2.0.0"}, ""},
	}
	for name, tc := range tests {
		err := tc.s.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", name, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
