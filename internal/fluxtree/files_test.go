package fluxtree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// holdsFluxSource tells a file that may hold a Kustomization, GitRepository or
// ArtifactGenerator from one that cannot, however the documents are written.
func TestHoldsFluxSource(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       bool
	}{
		{"a HelmRelease", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: a}\n", false},
		{"values, no object", "replicas: 3\nimage: {tag: x}\n", false},
		{"a Kustomization, block style", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: a\n", true},
		{"a Kustomization, flow style", "{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: a}}\n", true},
		{"a GitRepository in a List", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: source.toolkit.fluxcd.io/v1\n  kind: GitRepository\n  metadata: {name: a}\n", true},
		{"an ArtifactGenerator second", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: source.extensions.fluxcd.io/v1beta1\nkind: ArtifactGenerator\nmetadata: {name: g}\n", true},
		{"the group through an alias", "x: &g kustomize.toolkit.fluxcd.io/v1\napiVersion: *g\nkind: Kustomization\nmetadata: {name: a}\n", true},
		{"the group escaped", "apiVersion: \"kustomize\\x2etoolkit.fluxcd.io/v1\"\nkind: Kustomization\nmetadata: {name: a}\n", true},
		{"broken YAML naming no group: set aside, as a build that reads it names it", "apiVersion: v1\nkind: [\n", false},
		{"broken YAML naming a group", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: [\n", true},
		{"a HelmRelease with a backslash", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: a}\nspec: {values: {re: \"a\\\\.b\"}}\n", false},
		{"the group in a block scalar", "apiVersion: |-\n  source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: a}\n", true},
	} {
		if got := holdsFluxSource([]byte(c.data)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A tree with no Kustomization reads the files set aside as a tree read at once would: every
// plain file's HelmRelease, a broken file named, and of two files writing one object, the later
// in the walk's order.
func TestLoadPlainReadsSetAside(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"a/values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vals, namespace: web}\ndata: {v: first}\n",
		// Read at once (it holds a GitRepository), a/values.yaml set aside: b's still wins.
		"b/values.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: r, namespace: web}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: vals, namespace: web}\ndata: {v: second}\n",
		"b/web.yaml":    "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: web}\nspec: {chart: {spec: {chart: c}}}\n",
		"c/broken.yaml": "apiVersion: v1\nkind: [\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.HelmReleases) != 1 || tree.HelmReleases[0].Name != "web" {
		t.Fatalf("HelmReleases %v, want web", tree.HelmReleases)
	}
	if len(tree.Problems) != 1 || tree.Problems[0].Where != "c/broken.yaml" {
		t.Errorf("problems %v, want c/broken.yaml named", tree.Problems)
	}
	vals := tree.HelmReleases[0].Objects["/ConfigMap/web/vals"]
	if data, _ := vals["data"].(map[string]any); data["v"] != "second" {
		t.Errorf("ConfigMap web/vals %v, want b/values.yaml's (the later file)", vals)
	}
}
