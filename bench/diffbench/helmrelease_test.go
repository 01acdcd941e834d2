package diffbench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var helmReleases = flag.Int("helmreleases", 50, "HelmReleases for TestHelmReleaseCompare")

// TestHelmReleaseCompare measures "diff helmrelease --all -A" over 50 HelmReleases installed by
// the real helm-controller (5 namespaces, each HelmRelease with a chartRef OCIRepository and a
// valuesFrom ConfigMap), beside "diff release --all -A" over the same releases (the stored
// manifests: no render), in one run: wall time and API requests, which must stay at the LISTs
// per kind and namespace plus one read per source and valuesFrom object.
func TestHelmReleaseCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	root := testenv.RepoRoot()
	env, bin := startBench(t)
	helm := env.HelmBin("helm4")
	home := t.TempDir()
	base := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"), "NO_COLOR=1")
	if r := measure(t, base, helm, "package", filepath.Join(root, "testdata/charts/webapp"), "-d", home); r.code != 0 {
		t.Fatal(r.stderr)
	}
	repo := "oci://" + env.Registry + "/hrbench"
	if r := measure(t, base, helm, "push", filepath.Join(home, "webapp-1.0.0.tgz"), repo, "--plain-http"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ctx := context.Background()
	const namespaces = 5
	apply := func(doc string) { applyJSON(t, env, doc) }
	start := time.Now()
	for n := 0; n < namespaces; n++ {
		ns := fmt.Sprintf("hrbench-%d", n)
		env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		apply(fmt.Sprintf(`{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"OCIRepository","metadata":{"name":"webapp","namespace":%q},
			"spec":{"url":%q,"ref":{"semver":">=1.0.0"},"insecure":true,"interval":"1h","layerSelector":{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","operation":"copy"}}}`, ns, repo+"/webapp"))
	}
	for i := 0; i < *helmReleases; i++ {
		ns := fmt.Sprintf("hrbench-%d", i%namespaces)
		name := fmt.Sprintf("web-%02d", i)
		apply(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"values.yaml":"replicas: %d\n"}}`, name+"-values", ns, 1+i%3))
		apply(fmt.Sprintf(`{"apiVersion":"helm.toolkit.fluxcd.io/v2","kind":"HelmRelease","metadata":{"name":%q,"namespace":%q},
			"spec":{"interval":"1h","chartRef":{"kind":"OCIRepository","name":"webapp"},"install":{"disableWait":true},
			"driftDetection":{"mode":"enabled"},"valuesFrom":[{"kind":"ConfigMap","name":%q}]}}`, name, ns, name+"-values"))
	}
	hrs := schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		l, err := env.Dynamic.Resource(hrs).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, hr := range l.Items {
			h, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
			if len(h) > 0 {
				ready++
			}
		}
		if ready == *helmReleases {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d HelmReleases installed after 10 minutes", ready, *helmReleases)
		}
		time.Sleep(time.Second)
	}
	t.Logf("%d HelmReleases installed by helm-controller in %v", *helmReleases, time.Since(start).Round(time.Millisecond))

	measureAll := func(args ...string) run {
		var rs []run
		for i := 0; i < *runs; i++ {
			rs = append(rs, measure(t, base, bin, args...))
		}
		return median(rs)
	}
	hr := measureAll("diff", "helmrelease", "--all", "-A", "--normalize", "offline", "--stats", "-o", "json")
	rel := measureAll("diff", "release", "--all", "-A", "--normalize", "offline", "--stats", "-o", "json")
	for name, r := range map[string]run{"diff helmrelease": hr, "diff release": rel} {
		if r.code != 0 {
			t.Fatalf("%s --all -A: exit %d\n%s%s", name, r.code, r.out, r.stderr)
		}
	}
	var sum struct {
		Releases []struct{ HelmRelease, NextReconcile string }
	}
	json.Unmarshal([]byte(hr.out), &sum)
	if len(sum.Releases) != *helmReleases {
		t.Errorf("diff helmrelease --all -A: %d rows, want %d", len(sum.Releases), *helmReleases)
	}
	counts := func(r run) string {
		m := regexp.MustCompile(`(\d+) requests: (\d+) LIST, (\d+) GET, (\d+) dry-run create, (\d+) dry-run apply, (\d+) discovery, (\d+) other`).FindStringSubmatch(r.stderr)
		if m == nil {
			return "?"
		}
		return fmt.Sprintf("%s requests (%s LIST, %s GET, %s discovery, %s other)", m[1], m[2], m[3], m[6], m[7])
	}
	w := os.Stdout
	fmt.Fprintf(w, "\ndiff of %d HelmReleases in %d namespaces (chartRef OCIRepository, valuesFrom ConfigMap, 4 objects each), local API server, median of %d runs (GOMAXPROCS %d):\n",
		*helmReleases, namespaces, *runs, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "  %-58s %8s  %s\n", "helm drift diff helmrelease --all -A (render as helm-controller)", hr.wall.Round(time.Millisecond), counts(hr))
	fmt.Fprintf(w, "  %-58s %8s  %s\n", "helm drift diff release --all -A (stored manifests)", rel.wall.Round(time.Millisecond), counts(rel))
	fmt.Fprintf(w, "  wall-time ratio helmrelease/release: %.2f; per HelmRelease: %v\n", hr.wall.Seconds()/rel.wall.Seconds(), (hr.wall / time.Duration(*helmReleases)).Round(time.Millisecond))
	fmt.Fprintf(w, "  expected reads: 1 LIST of HelmReleases; per HelmRelease 1 GET of its OCIRepository and 1 of its ConfigMap, the Helm storage reads, and the LISTs per kind and namespace of its objects\n")
}

// applyJSON server-side applies one object, written as JSON, as field manager bench.
func applyJSON(t *testing.T, env *testenv.Env, doc string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := sigsyaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	gvk := u.GroupVersionKind()
	m, err := env.Mapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(u.Object)
	force := true
	if _, err := env.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()).Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "bench", Force: &force}); err != nil {
		t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
