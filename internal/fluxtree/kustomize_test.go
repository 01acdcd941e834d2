package fluxtree

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
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
	write := func(rel, text string) { writeFiles(t, root, map[string]string{rel: text}) }
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
		return kustomizeBuild(src, dir, kfile, manifest, nil, false, nil)
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

// TestLoadRemoteBases: a kustomization's remote base (a git URL, served here by git's own
// http-backend) is cloned, as kustomize-controller clones it by default, and refused, named,
// with NoRemoteBases, as it refuses it when run with --no-remote-bases; a remote file is
// fetched either way, as kustomize loads it; no clone is left behind.
func TestLoadRemoteBases(t *testing.T) {
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v (the test needs git)", err)
	}
	served := t.TempDir()
	repo := filepath.Join(served, "bases.git")
	writeFiles(t, repo, map[string]string{"podinfo/kustomization.yaml": "resources: [hr.yaml]\n", "podinfo/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: from-base, namespace: apps}
spec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}
`})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "bases"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/git/", http.StripPrefix("/git", &cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:    []string{"GIT_PROJECT_ROOT=" + served, "GIT_HTTP_EXPORT_ALL=1"},
		Stderr: io.Discard, // kustomize asks for the URL as a file first, which it refuses
	}))
	mux.HandleFunc("/raw/hr.yaml", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: from-url, namespace: apps}\nspec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"clusters/c/sync.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: remote, namespace: flux-system}
spec: {interval: 1h, path: ./remote, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: file, namespace: flux-system}
spec: {interval: 1h, path: ./file, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"remote/kustomization.yaml": "resources:\n  - " + srv.URL + "/git/bases.git//podinfo?ref=main\n",
		"file/kustomization.yaml":   "resources:\n  - " + srv.URL + "/raw/hr.yaml\n",
	})
	names := func(tree *Tree) []string {
		var out []string
		for _, h := range tree.HelmReleases {
			out = append(out, h.Name)
		}
		return out
	}
	// kustomize clones a remote base into a temporary directory of its own, and removes it.
	clones := func() []string {
		prefix, err := securefs.TmpConfirmedDirPrefix()
		if err != nil {
			t.Fatal(err)
		}
		found, _ := filepath.Glob(prefix + "*")
		return found
	}
	before := clones()
	defer func() {
		for _, c := range clones() {
			if !slices.Contains(before, c) {
				t.Errorf("%s: a remote base's clone left behind", c)
			}
		}
	}()
	tree, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree); !slices.Equal(got, []string{"from-base", "from-url"}) || len(tree.Problems) > 0 {
		t.Errorf("remote bases cloned: HelmReleases %v, problems %v; want from-base and from-url", got, tree.Problems)
	}
	tree, err = Load(context.Background(), root, Options{Work: t.TempDir(), NoRemoteBases: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree); !slices.Equal(got, []string{"from-url"}) || len(tree.Problems) != 1 || !strings.Contains(tree.Problems[0].Error(), "Kustomization flux-system/remote") {
		t.Errorf("--no-remote-bases: HelmReleases %v, problems %v; want from-url, and the remote Kustomization named", got, tree.Problems)
	}
}
