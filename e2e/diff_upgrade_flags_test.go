package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// redactedObjects parses a manifest into its objects with a Secret's data and stringData
// values replaced as "diff -o manifest" replaces them.
func redactedObjects(t *testing.T, text string) map[string]map[string]any {
	t.Helper()
	objs := objectsByID(t, text, "")
	for id, o := range objs {
		if !strings.HasPrefix(id, "Secret ") {
			continue
		}
		for _, f := range []string{"data", "stringData"} {
			if m, ok := o[f].(map[string]any); ok {
				for k := range m {
					m[k] = "(redacted)"
				}
			}
		}
	}
	return objs
}

// TestDiffUpgradeFlagsMatchHelm: for each flag that changes what helm upgrade renders, the
// manifest "diff upgrade -o manifest" renders with it equals what the real helm CLI's "helm
// upgrade --dry-run=server" with the same flag would install, object for object, under Helm 3
// and Helm 4 (each on a release it installed, so that each engine is the one that wrote it);
// and the flag makes a difference (the render without it differs), so no case passes by
// accident.
func TestDiffUpgradeFlagsMatchHelm(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	values := filepath.Join(t.TempDir(), "values.yaml")
	os.WriteFile(values, []byte("replicas: 5\nimage: nginx:1.29\n"), 0o644)
	file := filepath.Join(t.TempDir(), "motd.txt")
	os.WriteFile(file, []byte("from a file"), 0o644)
	webapp := filepath.Join(repoRoot, "testdata/charts/webapp")
	literal := filepath.Join(repoRoot, "testdata/charts/literalapp")
	cases := []struct {
		name, chart string
		flags       []string
	}{
		{"--set", webapp, []string{"--set", "replicas=3"}},
		{"--set-string", webapp, []string{"--set-string", "password=12345"}},
		{"--set-json", webapp, []string{"--set-json", `inlineLogLevel="debug"`}},
		{"-f", webapp, []string{"-f", values}},
		{"--values", webapp, []string{"--values", values}},
		{"--reuse-values", webapp, []string{"--reuse-values", "--set", "image=nginx:1.30"}},
		{"--reset-then-reuse-values", webapp, []string{"--reset-then-reuse-values", "--set", "image=nginx:1.30"}},
		{"--set-literal", literal, []string{"--set-literal", "motd=a, b, c"}},
		{"--set-file", literal, []string{"--set-file", "motd=" + file}},
		{"--skip-schema-validation", literal, []string{"--skip-schema-validation", "--set", "tier=gold"}},
	}
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			// The installs set a value, so that --reuse-values has something to reuse.
			h.run(t, false, nil, "install", "web", webapp, "-n", ns, "--set", "replicas=4")
			h.run(t, false, nil, "install", "lit", literal, "-n", ns)
			for _, tc := range cases {
				release := "web"
				if tc.chart == literal {
					release = "lit"
				}
				args := append([]string{"upgrade", release, tc.chart, "-n", ns}, tc.flags...)
				helmOut, _ := h.run(t, false, nil, append(args, "--dry-run=server", "-o", "json")...)
				var rel struct{ Manifest string }
				if err := json.Unmarshal([]byte(helmOut), &rel); err != nil || rel.Manifest == "" {
					t.Fatalf("%s: helm upgrade --dry-run=server -o json: %v\n%s", tc.name, err, helmOut)
				}
				ours, errOut, code := diffBinary(t, append([]string{"--kubeconfig", cluster.Kubeconfig, "-o", "manifest"}, args...)...)
				if code != 0 {
					t.Fatalf("%s: diff -o manifest: exit %d\n%s", tc.name, code, errOut)
				}
				want, got := redactedObjects(t, rel.Manifest), redactedObjects(t, ours)
				if !reflect.DeepEqual(got, want) {
					g, _ := sigsyaml.Marshal(got)
					w, _ := sigsyaml.Marshal(want)
					t.Errorf("%s: diff upgrade renders another manifest than helm upgrade --dry-run=server:\nours:\n%s\nhelm's:\n%s", tc.name, g, w)
				}
				plain, _, _ := diffBinary(t, "--kubeconfig", cluster.Kubeconfig, "-o", "manifest", "upgrade", release, tc.chart, "-n", ns)
				if tc.name != "--skip-schema-validation" && reflect.DeepEqual(redactedObjects(t, plain), want) {
					t.Errorf("%s: the render without the flag is the same: the case proves nothing", tc.name)
				}
			}
		})
	}
}
