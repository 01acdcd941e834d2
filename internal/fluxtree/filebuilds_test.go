package fluxtree

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/kustomize"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helm-drift/helm-drift/internal/objcache"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// wholeBuild builds the Kustomization of spec at dir of src as make does without the cache:
// the Flux generator, then one kustomize build; its objects as maps, or its error.
func wholeBuild(t *testing.T, spec map[string]any, src, dir string) ([]map[string]any, error) {
	t.Helper()
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": kustomizeGroup + "/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "k", "namespace": "flux-system"}, "spec": spec}}
	manifest, kfile, _, err := kustomize.NewGenerator(src, u).GenerateManifest(dir)
	if err != nil {
		return nil, err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	res, err := kustomizeBuild(src, dir, kfile, manifest, nil, false, nil)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out, nil
}

// fileBuilt builds it file by file with the cache in cache (cachedMake): nil when it declines.
func fileBuilt(spec map[string]any, src, dir, cache string) []map[string]any {
	b := &builder{opts: Options{Builds: &objcache.Cache{Dir: cache}}}
	rel, _ := filepath.Rel(src, dir)
	m := b.cachedMake(spec, src, dir, filepath.ToSlash(rel))
	if m == nil {
		return nil
	}
	return m.objs
}

// entries counts the cache's entries.
func entries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestCachedMakeMatchesBuild: a Kustomization of plain files built file by file, cold (each
// file built and kept) and warm (every file from the cache), gives the objects of its whole
// build, in its order, of the same Go types; what the file-by-file build cannot be sure of (a
// spec field the generator writes, postBuild, a kustomization file below, two files holding
// one object, a file that does not build) it declines and leaves to the whole build.
func TestCachedMakeMatchesBuild(t *testing.T) {
	kinds := map[string]string{
		"apps/b-release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 1h
  chart: {spec: {chart: web, version: "1.2.3", sourceRef: {kind: HelmRepository, name: r}}}
  values: {replicas: 2, ratio: 0.5, whole: 2.0, big: 12345678901, flag: true, none: null, list: [1, "1", 1.5], date: "2024-01-01"}
`,
		"apps/a-namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
		"apps/z-crd.yml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}]}
`,
		"apps/multi.yaml": `# two documents, and a comment
apiVersion: v1
kind: ConfigMap
metadata: {name: values, namespace: apps}
data: {a: "1"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: []
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local
  annotations: {config.kubernetes.io/local-config: "true"}
`,
		"apps/sub/list.yaml": `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: a, namespace: apps}}
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: b}}
`,
		"apps/sub/deep/.hidden.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\nstringData: {k: v}\n",
		"apps/README.md":             "# not a manifest\n",
		"apps/widget.yaml":           "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: apps}\n",
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range kinds {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	plain := map[string]any{"path": "./apps", "prune": true, "interval": "1h", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
		"commonMetadata": map[string]any{"labels": map[string]any{"team": "a"}}}
	and := func(k string, v any) map[string]any {
		out := map[string]any{k: v}
		for k, v := range plain {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		spec  map[string]any
		split bool // built file by file; else declined
	}{
		{"kinds namespaces lists and subdirectories", kinds, plain, true},
		{"one file", map[string]string{"apps/one.yaml": kinds["apps/a-namespace.yaml"]}, plain, true},
		{"targetNamespace", kinds, and("targetNamespace", "other"), false},
		{"patches", kinds, and("patches", []any{map[string]any{"patch": "- {op: add, path: /metadata/labels, value: {a: b}}", "target": map[string]any{"kind": "Namespace"}}}), false},
		{"postBuild substituted after the build", kinds, and("postBuild", map[string]any{"substitute": map[string]any{"a": "b"}}), true},
		{"decryption", kinds, and("decryption", map[string]any{"provider": "sops"}), false},
		{"a kustomization below", with(map[string]string{"apps/sub/kustomization.yaml": "resources: [list.yaml]\n"}), plain, false},
		{"two files holding one object", with(map[string]string{"apps/again.yaml": kinds["apps/a-namespace.yaml"]}), plain, false},
		{"a file that does not parse", with(map[string]string{"apps/broken.yaml": "kind: [\n"}), plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, cache := t.TempDir(), t.TempDir()
			writeFiles(t, src, tc.files)
			dir := filepath.Join(src, "apps")
			want, werr := wholeBuild(t, tc.spec, src, dir)
			cold := fileBuilt(tc.spec, src, dir, cache)
			if !tc.split {
				if cold != nil {
					t.Fatalf("built file by file; want it declined (whole build: %v)", werr)
				}
				return
			}
			if werr != nil {
				t.Fatalf("whole build: %v", werr)
			}
			if cold == nil {
				t.Fatal("declined; want it built file by file")
			}
			n := entries(t, cache)
			if n == 0 {
				t.Fatal("nothing kept in the cache")
			}
			warm := fileBuilt(tc.spec, src, dir, cache)
			if entries(t, cache) != n {
				t.Errorf("the warm build wrote %d entries more", entries(t, cache)-n)
			}
			for _, got := range []struct {
				name string
				objs []map[string]any
			}{{"cold", cold}, {"warm", warm}} {
				if !reflect.DeepEqual(got.objs, want) {
					t.Errorf("%s: file by file\n%v\nwant the whole build's\n%v", got.name, got.objs, want)
				}
			}
		})
	}
}

// TestCachedMakeCorpus: the public charts of the corpus, rendered by Helm's engine into a
// directory of files each (one per template, as a chart's output is often kept in a Flux
// repository), built file by file, cold and warm, give the objects of the whole build in its
// order.
func TestCachedMakeCorpus(t *testing.T) {
	corpus, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Skipf("corpus: %s not found (it sits beside the checkout in CI)", corpus)
	}
	for _, c := range charts {
		t.Run(c.Path, func(t *testing.T) {
			ch, err := loader.Load(filepath.Join(corpus, c.Path))
			if err != nil {
				t.Fatal(err)
			}
			vals := c.Values(t)
			if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
				t.Fatal(err)
			}
			rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: c.Release, Namespace: c.Namespace, IsInstall: true}, chartutil.DefaultCapabilities)
			if err != nil {
				t.Fatal(err)
			}
			out, err := engine.Render(ch, rv)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for name, text := range out {
				if strings.TrimSpace(text) != "" && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
					files["apps/"+name] = text
				}
			}
			for _, f := range ch.CRDObjects() {
				files["apps/"+f.Filename] = string(f.File.Data)
			}
			src, cache := t.TempDir(), t.TempDir()
			writeFiles(t, src, files)
			dir := filepath.Join(src, "apps")
			spec := map[string]any{"path": "./apps", "prune": true}
			want, err := wholeBuild(t, spec, src, dir)
			if err != nil {
				t.Fatalf("whole build: %v", err)
			}
			cold := fileBuilt(spec, src, dir, cache)
			warm := fileBuilt(spec, src, dir, cache)
			if !reflect.DeepEqual(cold, want) || !reflect.DeepEqual(warm, want) {
				t.Fatalf("file by file (cold %d objects, warm %d) differs from the whole build (%d objects)", len(cold), len(warm), len(want))
			}
			t.Logf("%d files, %d objects alike", len(files), len(want))
		})
	}
}
