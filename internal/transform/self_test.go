package transform

import (
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
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

// TestSelfAdopted: before the hand-over (an install, a bracket still open) the pair and the
// guard are ordinary objects of the release: nothing kept, every binding only audits, so that
// Helm's own recovery removes them. Rendered for a release helm-controller writes already, they
// are what the hand-over leaves: kept, and the bindings deny and warn.
func TestSelfAdopted(t *testing.T) {
	for _, tc := range []struct {
		adopted  bool
		keep     int
		actions  []string
		resumers int
	}{
		{adopted: false, keep: 0, actions: []string{"Audit", "Audit"}, resumers: 2},
		{adopted: true, keep: 5, actions: []string{"Deny", "Warn"}, resumers: 2},
	} {
		st, err := manifest.Split([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    helm.sh/chart: app-1.0.0\n"))
		if err != nil {
			t.Fatal(err)
		}
		s := &Self{Release: "app", Namespace: "apps", Repository: "oci://r/charts", Guard: true, Adopted: tc.adopted,
			Bracket: selfmanaged.BracketJob, HookImage: "img:1"}
		if err := s.Transform(st); err != nil {
			t.Fatal(err)
		}
		out, err := st.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		var keep, resumers int
		var actions []string
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var obj map[string]any
			if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			meta, _ := obj["metadata"].(map[string]any)
			if a, _ := meta["annotations"].(map[string]any); a[selfmanaged.ResourcePolicyAnnotation] == selfmanaged.KeepPolicy {
				keep++
			}
			switch obj["kind"] {
			case "ValidatingAdmissionPolicyBinding":
				for _, a := range obj["spec"].(map[string]any)["validationActions"].([]any) {
					actions = append(actions, a.(string))
				}
			case "ClusterRole", "ClusterRoleBinding":
				resumers++
			}
		}
		if keep != tc.keep || strings.Join(actions, ",") != strings.Join(tc.actions, ",") || resumers != tc.resumers {
			t.Errorf("adopted=%v: %d kept, actions %v, %d cluster-wide resumer RBAC objects; want %d, %v, %d", tc.adopted, keep, actions, resumers, tc.keep, tc.actions, tc.resumers)
		}
	}
}
