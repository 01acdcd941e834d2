package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	action4 "helm.sh/helm/v4/pkg/action"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/output"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// hrSecretMarker is the value a valuesFrom Secret gives the chart: no output may show it.
const hrSecretMarker = "HR-SECRET-MARKER-7f3e"

// applyYAML server-side applies every document of text as the field manager "e2e-tester".
func applyYAML(t *testing.T, text string) {
	t.Helper()
	for _, doc := range strings.Split(text, "\n---\n") {
		var u unstructured.Unstructured
		if err := sigsyaml.Unmarshal([]byte(doc), &u.Object); err != nil || len(u.Object) == 0 {
			t.Fatalf("test YAML: %v\n%s", err, doc)
		}
		rc, err := resourceClient(&u)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(u.Object)
		if _, err := rc.Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "e2e-tester", Force: ptrTo(true)}); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// webHelmRelease is the HelmRelease of the acceptance tests: testdata/charts/webapp from an
// OCIRepository of the test registry, values inline, from a ConfigMap and (with a targetPath)
// from a Secret, a kustomize patch and an image override, common metadata, drift detection.
func webHelmRelease(ns, mode, tag string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: webapp}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  driftDetection: {mode: %[2]s}
  values:
    image: nginx:1.27
  valuesFrom:
  - {kind: ConfigMap, name: webapp-values}
  - {kind: Secret, name: webapp-secret, valuesKey: password, targetPath: password}
  commonMetadata:
    labels: {team: platform}
  postRenderers:
  - kustomize:
      images:
      - {name: nginx, newTag: "%[3]s"}
      patches:
      - target: {kind: Deployment}
        patch: |
          - op: add
            path: /metadata/annotations
            value: {patched-by: flux}`, ns, mode, tag)
}

// applyWebHelmRelease applies, in ns, the OCIRepository of repo, the values ConfigMap
// (replicas 3), the values Secret holding password, and webHelmRelease with drift detection
// enabled.
// sameInputAsTestdata fails unless the HelmRelease applyWebHelmRelease applies in ns is
// testdata/helmrelease/web's in namespace team-a, field for field.
func sameInputAsTestdata(t *testing.T, ns string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata/helmrelease/web/input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	var fromTestdata, applied map[string]any
	if err := sigsyaml.Unmarshal([]byte(docs[len(docs)-1]), &fromTestdata); err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal([]byte(webHelmRelease("team-a", "enabled", "1.28")), &applied); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromTestdata, applied) {
		t.Fatalf("testdata/helmrelease/web/input.yaml's HelmRelease is not webHelmRelease's:\n%v\n%v", fromTestdata, applied)
	}
}

func applyWebHelmRelease(t *testing.T, ns, repo, password string) {
	t.Helper()
	applyWebHelmReleaseMode(t, ns, repo, password, "enabled")
}

// applyWebHelmReleaseMode is applyWebHelmRelease with drift detection in mode (enabled, warn,
// disabled).
func applyWebHelmReleaseMode(t *testing.T, ns, repo, password, mode string) {
	t.Helper()
	applyYAML(t, webappSource(ns, repo)+fmt.Sprintf(`
---
apiVersion: v1
kind: ConfigMap
metadata: {name: webapp-values, namespace: %[1]s}
data:
  values.yaml: "replicas: 3\n"
---
apiVersion: v1
kind: Secret
metadata: {name: webapp-secret, namespace: %[1]s}
stringData:
  password: %[2]s
---
%[3]s`, ns, password, webHelmRelease(ns, mode, "1.28")))
}

// webappSource is the OCIRepository webapp in ns: testdata/charts/webapp as pushed to repo.
func webappSource(ns, repo string) string {
	return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: webapp, namespace: %[1]s}
spec:
  url: %[2]s/webapp
  ref: {semver: ">=1.0.0"}
  insecure: true
  interval: 1h
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}`, ns, repo)
}

// helm4Config is the Helm 4 SDK's action configuration on the test environment, storage in ns.
func helm4Config(t *testing.T, ns string) *action4.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &cluster.Kubeconfig, &ns
	cfg := action4.NewConfiguration()
	if err := cfg.Init(flags, ns, ""); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// storedRelease is the release helm-controller stored, read with the Helm 4 SDK.
func storedRelease(t *testing.T, ns, name string) *release4.Release {
	t.Helper()
	r, err := helm4Config(t, ns).Releases.Last(name)
	if err != nil {
		t.Fatalf("release %s/%s: %v", ns, name, err)
	}
	return r.(*release4.Release)
}

// renderHelmRelease renders the live HelmRelease with internal/helmcontroller, as diff helmrelease
// does, against the release's storage.
func renderHelmRelease(t *testing.T, ns, name string) *helmcontroller.Rendered {
	t.Helper()
	ctx := context.Background()
	cl, err := live.New(ctx, live.Options{Kubeconfig: cluster.Kubeconfig, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := cl.Get(ctx, "helm.toolkit.fluxcd.io", "v2", "HelmRelease", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := helmcontroller.Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := helmcontroller.Values(ctx, cl, hr)
	if err != nil {
		t.Fatal(err)
	}
	ch, src, err := helmcontroller.LoadChart(ctx, hr, helmcontroller.ChartOptions{Get: cl})
	if err != nil {
		t.Fatal(err)
	}
	cfg := helm4Config(t, helmcontroller.IdentityOf(hr).Storage)
	// With the inputs unchanged, the next action's render is what helm-controller stored for
	// the last revision: the manifest does not depend on the revision number.
	r, err := helmcontroller.Render(ctx, hr, ch, vals, helmcontroller.RenderOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	r.Source = src
	return r
}

// manifestObjects parses a manifest into its objects, in order.
func manifestObjects(t *testing.T, text string) []manifest.Object {
	t.Helper()
	st, err := manifest.Split([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Objects(st)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// objectsByID parses a manifest into its objects, by kind, namespace and name.
func objectsByID(t *testing.T, text, ns string) map[string]map[string]any {
	t.Helper()
	objs := manifestObjects(t, text)
	out := map[string]map[string]any{}
	for _, o := range objs {
		m, err := o.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out[o.Kind+" "+ns+"/"+o.Name] = m
	}
	return out
}

// sameObjects fails unless two manifests hold the same objects, field for field.
func sameObjects(t *testing.T, what, got, want, ns string) {
	t.Helper()
	g, w := objectsByID(t, got, ns), objectsByID(t, want, ns)
	if len(g) != len(w) || len(w) == 0 {
		t.Errorf("%s: %d objects rendered, %d stored", what, len(g), len(w))
	}
	for id, wo := range w {
		if !reflect.DeepEqual(g[id], wo) {
			gy, _ := sigsyaml.Marshal(g[id])
			wy, _ := sigsyaml.Marshal(wo)
			t.Errorf("%s: %s differs from what helm-controller stored:\nrendered:\n%s\nstored:\n%s", what, id, redactMarker(string(gy)), redactMarker(string(wy)))
		}
	}
}

func redactMarker(s string) string { return strings.ReplaceAll(s, hrSecretMarker, "(marker)") }

// hrDiff runs diff helmrelease and checks that the Secret's value shows nowhere.
func hrDiff(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := diffBinary(t, append([]string{"helmrelease", "--kubeconfig", cluster.Kubeconfig}, args...)...)
	if strings.Contains(out+errOut, hrSecretMarker) {
		t.Fatalf("diff helmrelease %v printed a value from a Secret", args)
	}
	return out + errOut, code
}

// waitHistory waits until helm-controller has recorded revision want of HelmRelease ns/web.
func waitHistory(t *testing.T, ns string, want int64) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("HelmRelease %s/web at revision %d", ns, want), func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(history) == 0 {
			return false, "no history"
		}
		v, _, _ := unstructured.NestedInt64(history[0].(map[string]any), "version")
		ready := condition(hr, "Ready")
		return v == want && ready == "True", fmt.Sprintf("revision %d, Ready=%s", v, ready)
	})
}

// TestDiffHelmRelease is the acceptance test of diff helmrelease against the real
// helm-controller and source-controller: the render equals what helm-controller stored, object
// for object; diff reports 0 in both normalisation modes; and each prediction (an upgrade
// from a values edit, a drift correction that restores a deleted object and keeps a foreign
// env entry, nothing under warn, a --file preview) is checked by letting helm-controller
// reconcile. No output shows the value that came from a Secret.
func TestDiffHelmRelease(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	h.run(t, false, nil, "package", filepath.Join(repoRoot, "testdata/charts/webapp"), "-d", dir)
	repo := "oci://" + cluster.Registry + "/hr-" + ns
	h.run(t, false, nil, "push", filepath.Join(dir, "webapp-1.0.0.tgz"), repo, "--plain-http")
	applyWebHelmRelease(t, ns, repo, hrSecretMarker)
	waitHistory(t, ns, 1)

	// Identical render.
	stored := storedRelease(t, ns, "web")
	r := renderHelmRelease(t, ns, "web")
	sameObjects(t, "OCIRepository chartRef", r.Manifest, stored.Manifest, ns)
	if r.Chart.Metadata.Version != stored.Chart.Metadata.Version {
		t.Errorf("chart version %s, helm-controller stored %s", r.Chart.Metadata.Version, stored.Chart.Metadata.Version)
	}
	// The same render with no cluster: helmcontroller's TestBuildWithoutCluster renders the
	// HelmRelease of testdata/helmrelease/web (this one, in namespace team-a) into its golden
	// manifest, which -o manifest prints here against the cluster.
	sameInputAsTestdata(t, ns)
	want, err := os.ReadFile(filepath.Join(repoRoot, "testdata/helmrelease/web/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wantOut strings.Builder
	if err := output.WriteManifest(&wantOut, strings.ReplaceAll(string(want), "team-a", ns)); err != nil {
		t.Fatal(err)
	}
	if out, code := hrDiff(t, "web", "-n", ns, "-o", "manifest"); code != 0 || out != wantOut.String() {
		t.Errorf("diff helmrelease -o manifest (exit %d) is not the render made with no cluster:\n%s\nwant:\n%s", code, out, wantOut.String())
	}
	for _, mode := range []string{"offline", "server"} {
		out, code := hrDiff(t, "web", "-n", ns, "--normalize", mode)
		if code != 0 || !strings.Contains(out, "0 divergences") || !strings.Contains(out, "next reconcile: drift correction") {
			t.Errorf("diff helmrelease (%s) of a fresh install: exit %d\n%s", mode, code, out)
		}
	}

	// A values edit: an upgrade, predicted to resolve exactly the replicas row.
	applyYAML(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: webapp-values, namespace: %s}\ndata:\n  values.yaml: \"replicas: 4\\n\"", ns))
	out, code := hrDiff(t, "web", "-n", ns, "-o", "json")
	var rep struct {
		Next        struct{ Action string } `json:"nextReconcile"`
		Divergences int
		Objects     []struct {
			Object string
			Rows   []struct {
				Class, Path string
				Resolved    bool `json:"resolvedByUpgrade"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); err != nil {
		t.Fatalf("diff helmrelease -o json: %v\n%s", err, out)
	}
	if code != 2 || rep.Next.Action != "upgrade" || rep.Divergences != 1 {
		t.Fatalf("after a values edit: exit %d, next %q, %d divergences, want 2, upgrade, 1:\n%s", code, rep.Next.Action, rep.Divergences, out)
	}
	for _, o := range rep.Objects {
		for _, row := range o.Rows {
			if row.Path != "spec.replicas" || !row.Resolved {
				t.Errorf("after a values edit: unexpected row %s %s %s (resolved %v)", o.Object, row.Class, row.Path, row.Resolved)
			}
		}
	}
	requestReconcile(t, helmReleases, ns, "web")
	waitHistory(t, ns, 2)
	if out, code := hrDiff(t, "web", "-n", ns); code != 0 || !strings.Contains(out, "0 divergences") {
		t.Errorf("after helm-controller's upgrade: exit %d, want 0 (every row was predicted resolved):\n%s", code, out)
	}
	sameObjects(t, "after the upgrade", renderHelmRelease(t, ns, "web").Manifest, storedRelease(t, ns, "web").Manifest, ns)

	// Drift under mode enabled: a deleted Service is predicted restored, a foreign env entry kept.
	if err := cluster.Kube.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q},"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"EXTRA","value":"by-hand"}]}]}}}}`, ns)
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	out, code = hrDiff(t, "web", "-n", ns)
	if code != 2 || !strings.Contains(out, "next reconcile: drift correction") ||
		!hasRow(out, "Service "+ns+"/web", "CHART-ONLY", "(whole object)", "yes: drift correction restores it") ||
		!hasRow(out, "Deployment.apps "+ns+"/web", "CLUSTER-ONLY", "env[name=EXTRA]", "no: drift correction never removes") {
		t.Fatalf("drift under mode enabled: exit %d\n%s", code, out)
	}
	requestReconcile(t, helmReleases, ns, "web")
	testenv.Eventually(t, time.Minute, "helm-controller restores the Service", func() (bool, string) {
		_, err := cluster.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	out, code = hrDiff(t, "web", "-n", ns)
	if code != 2 || strings.Contains(out, "Service "+ns+"/web") || !hasRow(out, "env[name=EXTRA]", "CLUSTER-ONLY") || !strings.Contains(out, "1 divergences") {
		t.Errorf("after the drift correction: want only the kept env entry:\n%s", out)
	}

	// Under warn, nothing is predicted fixed, and nothing is.
	applyYAML(t, webHelmRelease(ns, "warn", "1.28"))
	testenv.Eventually(t, time.Minute, "helm-controller observes the warn generation", func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		g, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		return g == hr.GetGeneration(), fmt.Sprintf("observed %d of %d", g, hr.GetGeneration())
	})
	if err := cluster.Kube.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, code = hrDiff(t, "web", "-n", ns)
	if code != 2 || !strings.Contains(out, "next reconcile: nothing") || !hasRow(out, "Service "+ns+"/web", "CHART-ONLY", "no: nothing will") {
		t.Fatalf("drift under mode warn: exit %d\n%s", code, out)
	}
	requestReconcile(t, helmReleases, ns, "web")
	time.Sleep(3 * time.Second)
	if _, err := cluster.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("under warn the Service came back (%v): the prediction said nothing would", err)
	}

	// A pull request's preview: the HelmRelease as written, with a new image tag and drift
	// detection back on.
	file := filepath.Join(dir, "hr.yaml")
	os.WriteFile(file, []byte(webHelmRelease(ns, "enabled", "1.29")), 0o644)
	out, code = hrDiff(t, "--file", file)
	if code != 2 || !strings.Contains(out, "next reconcile: upgrade: spec.postRenderers changed") ||
		!hasRow(out, "containers[name=web].image", "nginx:1.29", "nginx:1.28", "yes") ||
		!hasRow(out, "Service "+ns+"/web", "CHART-ONLY", "yes: created") {
		t.Fatalf("--file preview: exit %d\n%s", code, out)
	}
	applyYAML(t, webHelmRelease(ns, "enabled", "1.29"))
	waitHistory(t, ns, 3)
	out, code = hrDiff(t, "web", "-n", ns)
	if code != 2 || !hasRow(out, "env[name=EXTRA]", "CLUSTER-ONLY") || !strings.Contains(out, "1 divergences") {
		t.Errorf("after applying the previewed change: want only the kept env entry:\n%s", out)
	}

	// Secrets stay secret in every output mode, and in the error of a values Secret that
	// does not parse.
	for _, format := range []string{"table", "json", "yaml", "markdown", "counts"} {
		if _, code := hrDiff(t, "web", "-n", ns, "-o", format); code != 2 {
			t.Errorf("-o %s: exit %d, want 2", format, code)
		}
	}
	applyYAML(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: broken-values, namespace: %[1]s}
stringData:
  values.yaml: "password: [%[2]s"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: broken, namespace: %[1]s}
spec:
  interval: 1h
  suspend: true
  chartRef: {kind: OCIRepository, name: webapp}
  valuesFrom:
  - {kind: Secret, name: broken-values}`, ns, hrSecretMarker))
	if out, code := hrDiff(t, "broken", "-n", ns); code != 3 || !strings.Contains(out, "valuesFrom Secret "+ns+"/broken-values key values.yaml") {
		t.Errorf("a values Secret that does not parse: exit %d, want 3 naming it:\n%s", code, out)
	}

	// --all: one summary row per HelmRelease.
	out, code = hrDiff(t, "--all", "-n", ns)
	if code != 3 || !hasRow(out, ns+"/web", "drift correction", ns+"/web", "1/") || !hasRow(out, ns+"/broken", "could not measure") {
		t.Errorf("diff helmrelease --all: exit %d\n%s", code, out)
	}
}

// TestDiffHelmReleaseHelmRepository: a HelmRelease with spec.chart from an HTTP HelmRepository
// (served by the test on loopback): helm-controller makes the HelmChart <ns>-<name>; the render
// from its artifact equals what helm-controller stored and the diff is 0.
func TestDiffHelmReleaseHelmRepository(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	charts := chartRepository(t, h, filepath.Join(repoRoot, "testdata/charts/webapp"))
	applyYAML(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h}
---
apiVersion: v1
kind: Secret
metadata: {name: webapp-secret, namespace: %[1]s}
stringData:
  values.yaml: "password: %[3]s\n"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: "1.x", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  valuesFrom:
  - {kind: Secret, name: webapp-secret}
  values: {replicas: 1}`, ns, charts, hrSecretMarker))
	waitHistory(t, ns, 1)
	r := renderHelmRelease(t, ns, "web")
	if r.Source.Kind != "HelmChart" || r.Source.Name != ns+"-web" || r.Source.From != "artifact" {
		t.Errorf("source %s, want the artifact of HelmChart %s/%s-web", r.Source, ns, ns)
	}
	sameObjects(t, "spec.chart from a HelmRepository", r.Manifest, storedRelease(t, ns, "web").Manifest, ns)
	for _, mode := range []string{"offline", "server"} {
		if out, code := hrDiff(t, "web", "-n", ns, "--normalize", mode); code != 0 || !strings.Contains(out, "0 divergences") || !strings.Contains(out, "next reconcile: nothing") {
			t.Errorf("diff helmrelease (%s): exit %d\n%s", mode, code, out)
		}
	}
}
