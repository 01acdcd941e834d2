package fluxtree

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/objcache"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// treeSummary is what a tree says, to compare two reads of it: its HelmReleases (object, file,
// chain), problems and the objects of each context.
func treeSummary(t *testing.T, root string, builds string) string {
	t.Helper()
	o := Options{Work: t.TempDir()}
	if builds != "" {
		o.Builds = &objcache.Cache{Dir: builds}
	}
	tree, err := Load(context.Background(), root, o)
	if err != nil {
		t.Fatal(err)
	}
	type hr struct {
		Key, File string
		Via       []string
		Object    map[string]any
	}
	var out struct {
		HelmReleases []hr
		Problems     []string
		Contexts     map[string]map[string]map[string]any
	}
	for _, h := range tree.HelmReleases {
		out.HelmReleases = append(out.HelmReleases, hr{h.Key(), h.File, h.Via, h.Object})
	}
	for _, p := range tree.Problems {
		out.Problems = append(out.Problems, strings.ReplaceAll(p.Error(), root, "ROOT"))
	}
	out.Contexts = tree.contexts
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// retag rewrites, in every entry of the cache, one value into another: what a read from the
// cache then gives shows that it was read from there.
func retag(t *testing.T, builds, from, to string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(builds, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(from)) {
			n++
			return os.WriteFile(p, bytes.ReplaceAll(data, []byte(from), []byte(to)), 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// overlayTree is a Flux repository of kustomize overlays: a base, a component, a patch, a
// configMapGenerator's file, an image override, postBuild variables (inline and from a
// ConfigMap the tree applies); and a Kustomization that reads a kustomization
// naming a URL (in a comment: any URL spoils the trace, as kustomize fetches remote files over
// HTTP, not through the file system), which is never kept.
var overlayTree = map[string]string{
	"clusters/c/kustomization.yaml": "resources: [sync.yaml, apps.yaml]\n",
	"clusters/c/sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://git.example.com/fleet.git, interval: 1m, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/c, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	"clusters/c/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {team: blue}
    substituteFrom: [{kind: ConfigMap, name: vars}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: vars, namespace: flux-system}
data: {region: eu-1}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: linked, namespace: flux-system}
spec: {interval: 10m, path: ./apps/linked, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	"apps/base/kustomization.yaml": "resources: [ns.yaml, hr.yaml]\n",
	"apps/base/ns.yaml":            "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n",
	"apps/base/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: web}
spec:
  interval: 1h
  chart: {spec: {chart: web, version: "1.0.0", sourceRef: {kind: HelmRepository, name: r, namespace: web}}}
  values: {replicas: 2, tag: marker-1, ratio: 0.5, team: "${team}", region: "${region}"}
`,
	"apps/comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- {path: labels.yaml, target: {kind: HelmRelease}}\n",
	"apps/comp/labels.yaml":        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: any, labels: {team: a}}\n",
	"apps/prod/kustomization.yaml": `resources: [../base]
components: [../comp]
patches:
- {path: values.yaml, target: {kind: HelmRelease}}
configMapGenerator:
- {name: extra, namespace: web, files: [extra.txt]}
images:
- {name: nginx, newTag: "1.27"}
`,
	"apps/prod/values.yaml":          "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: any}\nspec: {values: {replicas: 3}}\n",
	"apps/prod/extra.txt":            "a file of the generator\n",
	"apps/linked/kustomization.yaml": "resources: [../other]\nnamePrefix: l-\n",
	"apps/other/kustomization.yaml":  "# the base, as https://example.com/docs has it\nresources: [../base]\n",
}

// TestTracedBuildsMatchBuild: a tree of overlays read with the build cache, cold (every whole
// build traced and kept) and warm (every build read back once its files answer alike), says what
// it says without the cache, word for word; and once a file a build read changes (a value, a
// generator's file), the warm read says what a read without the cache says of the new files.
// The warm read is from the cache (a value rewritten in the cache shows in it), save for the
// Kustomization whose kustomization names a URL, which is never kept.
func TestTracedBuildsMatchBuild(t *testing.T) {
	root, builds := t.TempDir(), t.TempDir()
	writeFiles(t, root, overlayTree)
	want := treeSummary(t, root, "")
	if !strings.Contains(want, `"replicas": 3`) || !strings.Contains(want, "l-web") || !strings.Contains(want, "a file of the generator") ||
		!strings.Contains(want, `"team": "blue"`) || !strings.Contains(want, `"region": "eu-1"`) || !strings.Contains(want, `"team": "${team}"`) {
		t.Fatalf("the tree does not build as meant:\n%s", want)
	}
	if cold := treeSummary(t, root, builds); cold != want {
		t.Fatalf("cold cache:\n%s\nwant\n%s", cold, want)
	}
	if warm := treeSummary(t, root, builds); warm != want {
		t.Fatalf("warm cache:\n%s\nwant\n%s", warm, want)
	}
	// Read from the cache: a value rewritten there shows, in the builds kept, and only there.
	if n := retag(t, builds, "marker-1", "marker-cached"); n == 0 {
		t.Fatal("no entry of the cache holds the HelmRelease's value")
	}
	tagged := treeSummary(t, root, builds)
	if got := strings.Count(tagged, "marker-cached"); got != 2 { // apps/web: the HelmRelease in the HelmReleases and in its context
		t.Errorf("%d values read from the cache, want the kept build's two:\n%s", got, tagged)
	}
	if !strings.Contains(tagged, "marker-1") {
		t.Errorf("the Kustomization whose kustomization names a URL was read from the cache:\n%s", tagged)
	}
	retag(t, builds, "marker-cached", "marker-1")

	// A file a build read changes: built again, as without the cache.
	for name, text := range map[string]string{
		"apps/base/hr.yaml":   strings.Replace(overlayTree["apps/base/hr.yaml"], "marker-1", "marker-2", 1),
		"apps/prod/extra.txt": "another content\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		want := treeSummary(t, root, "")
		if got := treeSummary(t, root, builds); got != want {
			t.Errorf("after %s changed:\n%s\nwant\n%s", name, got, want)
		}
	}
}

// TestTracedBuildsFluxExample: Flux's own example repository, as published, reads alike with
// the build cache, cold and warm, its overlays' builds read from the cache.
func TestTracedBuildsFluxExample(t *testing.T) {
	repo := filepath.Join(testenv.RepoRoot(), "..", "shared", "flux-repos", "flux2-kustomize-helm-example")
	if _, err := os.Stat(repo); err != nil {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") == "1" {
			t.Fatalf("%s not found, and HELM_DRIFT_REQUIRE_CORPUS=1 says it must run", repo)
		}
		t.Skipf("%s not found (it sits beside the checkout in CI)", repo)
	}
	builds := t.TempDir()
	want := treeSummary(t, repo, "")
	if !strings.Contains(want, "podinfo") {
		t.Fatalf("the example's tree holds no podinfo:\n%.2000s", want)
	}
	for _, run := range []string{"cold", "warm"} {
		if got := treeSummary(t, repo, builds); got != want {
			t.Errorf("%s cache:\n%s\nwant\n%s", run, got, want)
		}
	}
	// The production overlay's build is read from the cache.
	if n := retag(t, builds, "podinfo.production", "podinfo.cached"); n == 0 {
		t.Fatal("no entry of the cache holds the production overlay's value")
	}
	if got := treeSummary(t, repo, builds); !strings.Contains(got, "podinfo.cached") {
		t.Errorf("the production overlay was built again, not read from the cache:\n%.3000s", got)
	}
}
