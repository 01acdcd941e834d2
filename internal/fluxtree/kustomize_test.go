package fluxtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/kustomize"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// A kustomization's own OpenAPI schema (its openapi field) changes how a strategic merge patch
// merges a custom kind's list; kustomizeBuild keeps the builtin schema between builds, so a
// build after one with a schema of its own must not see it, and one with its own schema must
// see it over the builtin one: each build gives what fluxcd/pkg/kustomize's SecureBuild gives,
// whatever was built before it.
func TestKustomizeBuildSchemaPerBuild(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const object = `apiVersion: example.com/v1alpha1
kind: MyKind
metadata: {name: app}
spec:
  containers:
  - {name: a, image: a:1}
  - {name: b, image: b:1}
`
	const patch = `apiVersion: example.com/v1alpha1
kind: MyKind
metadata: {name: app}
spec:
  containers:
  - {name: b, image: b:2}
`
	const schema = `{"definitions": {
  "v1alpha1.MyKind": {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "MyKind", "version": "v1alpha1"}],
    "properties": {
      "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
      "spec": {"type": "object", "properties": {"containers": {
        "type": "array", "items": {"$ref": "#/definitions/v1alpha1.Container"},
        "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}}}},
  "v1alpha1.Container": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}}
}}`
	// A builtin kind beside it, patched by the builtin schema's merge key (a port's
	// containerPort), which a build with its own schema must still know.
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        ports:
        - {containerPort: 80, name: http}
        - {containerPort: 443, name: https}
`
	const deploymentPatch = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        ports:
        - {containerPort: 443, name: tls}
`
	const k = "resources: [app.yaml, deployment.yaml]\npatches: [{path: patch.yaml}, {path: deployment-patch.yaml}]\n"
	for _, d := range []string{"plain", "own"} {
		write(d+"/app.yaml", object)
		write(d+"/patch.yaml", patch)
		write(d+"/deployment.yaml", deployment)
		write(d+"/deployment-patch.yaml", deploymentPatch)
	}
	write("plain/kustomization.yaml", k)
	write("own/schema.json", schema)
	write("own/kustomization.yaml", "openapi: {path: schema.json}\n"+k)

	yamlOf := func(build func(src, dir string) (resmap.ResMap, error), dir string) string {
		t.Helper()
		m, err := build(root, filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out, err := m.AsYaml()
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		return string(out)
	}
	ours := func(src, dir string) (resmap.ResMap, error) {
		buildMu.Lock()
		defer buildMu.Unlock()
		kfile := filepath.Join(dir, "kustomization.yaml")
		manifest, err := os.ReadFile(kfile)
		if err != nil {
			return nil, err
		}
		return kustomizeBuild(src, dir, kfile, manifest, nil)
	}
	flux := func(src, dir string) (resmap.ResMap, error) { return kustomize.SecureBuild(src, dir, false) }
	want := map[string]string{"plain": yamlOf(flux, "plain"), "own": yamlOf(flux, "own")}
	if want["plain"] == want["own"] {
		t.Fatalf("the schema changes nothing; the test proves nothing:\n%s", want["plain"])
	}
	for i, dir := range []string{"plain", "own", "plain", "own", "own", "plain"} {
		if got := yamlOf(ours, dir); got != want[dir] {
			t.Errorf("build %d (%s): got\n%s\nwant (SecureBuild's)\n%s", i, dir, got, want[dir])
		}
	}
	if v := openapi.GetSchemaVersion(); v != builtinSchema {
		t.Errorf("after the builds the schema is %q, want the builtin %q", v, builtinSchema)
	}
}
