package manifest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parsed reads the identity fields of a document with the full parser only.
func parsed(t *testing.T, d *Document) (Object, bool) {
	t.Helper()
	root, err := d.Node()
	if err != nil || root == nil {
		return Object{}, false
	}
	n := root.YNode()
	meta := Lookup(n, "metadata")
	_, hook := StringMap(Lookup(meta, "annotations"))["helm.sh/hook"]
	return Object{Doc: d, Item: -1, APIVersion: Scalar(n, "apiVersion"), Kind: Scalar(n, "kind"),
		Name: Scalar(meta, "name"), Namespace: Scalar(meta, "namespace"), Hook: hook}, true
}

// TestScanAgreesWithParser: wherever the line scanner claims certainty, it reads what the
// YAML parser reads, on every stream under testdata and on tricky documents.
func TestScanAgreesWithParser(t *testing.T) {
	inputs := map[string]string{
		"quoted":        "apiVersion: \"v1\"\nkind: 'ConfigMap'\nmetadata:\n  name: \"a\" # c\n  namespace: 'b'\n",
		"comment first": "# Source: x\n\napiVersion: v1 # c\nkind: Secret\nmetadata:\n    labels:\n      name: not-this\n    name: real\n",
		"name after":    "kind: Service\nmetadata:\n  annotations:\n    x: |\n      name: nope\n  name: svc\napiVersion: v1\n",
		"flow meta":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flow}\n",
		"anchor":        "apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: a\n",
		"alias name":    "apiVersion: v1\nkind: ConfigMap\nx: &n a\nmetadata:\n  name: *n\n",
		"escaped":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\\u0062\"\n",
		"multi-line":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name:\n    long\n",
		"dup kind":      "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata:\n  name: a\n",
		"null name":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ~\n",
		"empty":         "# only a comment\n",
		"tag":           "apiVersion: v1\nkind: !!str ConfigMap\nmetadata:\n  name: a\n",
		"flow hook":     "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n  annotations: {helm.sh/hook: pre-upgrade}\n",
		"hook":          "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n  annotations:\n    \"helm.sh/hook\": pre-upgrade\n",
	}
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		inputs[f] = string(data)
	}
	for name, in := range inputs {
		s, err := Split([]byte(in))
		if err != nil {
			continue
		}
		for _, d := range s.Docs {
			got, ok := scan(d, &strs{})
			if !ok {
				continue // the parser decides
			}
			want, parsedOK := parsed(t, d)
			if !parsedOK {
				continue // the scanner reads identities, it does not validate: Helm does
			}
			g := [5]string{got.APIVersion, got.Kind, got.Name, got.Namespace, fmt.Sprint(got.Hook)}
			w := [5]string{want.APIVersion, want.Kind, want.Name, want.Namespace, fmt.Sprint(want.Hook)}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s %s: scanner disagrees with the parser (-parser +scanner):\n%s", name, d.Name(), diff)
			}
		}
	}
}

func TestIdentityScopes(t *testing.T) {
	c := NewIdentifier(nil, "rel", nil)
	tests := []struct {
		apiVersion, kind, ns string
		want                 Identity
	}{
		{"v1", "ConfigMap", "", Identity{"", "ConfigMap", "rel", "x"}},
		{"v1", "Namespace", "", Identity{"", "Namespace", "", "x"}},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", "stray", Identity{"rbac.authorization.k8s.io", "ClusterRole", "", "x"}},
		{"extensions/v1beta1", "Ingress", "a", Identity{"networking.k8s.io", "Ingress", "a", "x"}},
		{"apps/v1beta2", "StatefulSet", "", Identity{"apps", "StatefulSet", "rel", "x"}},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "", Identity{"apiextensions.k8s.io", "CustomResourceDefinition", "", "x"}},
		{"source.toolkit.fluxcd.io/v1", "OCIRepository", "", Identity{"source.toolkit.fluxcd.io", "OCIRepository", "rel", "x"}},
	}
	for _, tc := range tests {
		got := c.Identity(Object{APIVersion: tc.apiVersion, Kind: tc.kind, Namespace: tc.ns, Name: "x"})
		if got != tc.want {
			t.Errorf("%s %s: identity %+v, want %+v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
	if len(c.Notes) != 0 {
		t.Errorf("notes for built-in kinds: %v", c.Notes)
	}
}

// TestStrsCopied: names share chunks, and a string handed out never changes as more are
// copied after it, into its chunk or a new one.
func TestStrsCopied(t *testing.T) {
	st := &strs{chunkSize: 64}
	var got []string
	var want []string
	for i := range 40 {
		b := []byte(fmt.Sprintf("name-%02d", i))
		got = append(got, st.copied(b))
		want = append(want, string(b))
		b[0] = 'X' // the caller's bytes change; the copy does not
	}
	long := bytes.Repeat([]byte("n"), 17)
	got, want = append(got, st.copied(long)), append(want, string(long))
	got, want = append(got, st.copied(nil)), append(want, "")
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("copied %d = %q, want %q", i, got[i], want[i])
		}
	}
	if (&strs{}).copied([]byte("a")) != "a" {
		t.Error("the zero strs does not copy")
	}
	name := []byte("app-00001")
	if n := testing.AllocsPerRun(10, func() {
		st := &strs{chunkSize: 1024}
		for range 100 {
			st.copied(name)
		}
	}); n > 3 {
		t.Errorf("100 names of 9 bytes took %.0f allocations, want at most 3 (a 1 KiB chunk holds 113 of them)", n)
	}
}
