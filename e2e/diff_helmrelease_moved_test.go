package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/testenv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// chartHelmRelease pushes testdata/charts/<chart> to the test registry and applies an
// OCIRepository and a HelmRelease web for it in ns, drift detection enabled; it waits for the
// install.
func chartHelmRelease(t *testing.T, ns, chart string) {
	t.Helper()
	chartHelmReleaseWith(t, ns, chart, "")
}

// chartHelmReleaseWith is chartHelmRelease with more of the HelmRelease's spec (YAML lines,
// indented by two spaces).
func chartHelmReleaseWith(t *testing.T, ns, chart, spec string) {
	t.Helper()
	h := clusterHelm(t, "helm4")
	dir := t.TempDir()
	h.run(t, false, nil, "package", filepath.Join(repoRoot, "testdata/charts", chart), "-d", dir)
	repo := "oci://" + cluster.Registry + "/moved-" + ns
	h.run(t, false, nil, "push", filepath.Join(dir, chart+"-0.1.0.tgz"), repo, "--plain-http")
	applyYAML(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: %[3]s, namespace: %[1]s}
spec:
  url: %[2]s/%[3]s
  ref: {semver: ">=0.1.0"}
  insecure: true
  interval: 1h
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: %[3]s}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  driftDetection: {mode: enabled}
%[4]s`, ns, repo, chart, spec))
	waitHistory(t, ns, 1)
}

// forceReconcile asks helm-controller for a forced upgrade of HelmRelease ns/web
// (reconcile.fluxcd.io/forceAt with requestedAt) and waits for revision want.
func forceReconcile(t *testing.T, ns string, want int64) {
	t.Helper()
	requestForce(t, ns)
	waitHistory(t, ns, want)
}

// requestForce asks helm-controller for a forced upgrade of HelmRelease ns/web.
func requestForce(t *testing.T, ns string) {
	t.Helper()
	token := fmt.Sprint(time.Now().UnixNano())
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q,"reconcile.fluxcd.io/forceAt":%q}}}`, token, token)
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDiffHelmReleaseWhoMoved: HelmReleases installed by the real helm-controller and
// untouched. A chart that reuses a looked-up password: diff helmrelease shows its checksum moved
// by the chart, render-dependent, left as it is by drift correction, and --exit-code-on=drift
// exits 0; a forced reconcile installs exactly the predicted value. A chart that generates a
// self-signed certificate and a password on every render: 0 divergences, its fields flagged
// unstable; --count-unstable counts them.
func TestDiffHelmReleaseWhoMoved(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	t.Run("lookup", func(t *testing.T) {
		ns := cluster.Namespace(t)
		chartHelmRelease(t, ns, "reuseapp")
		rep, out, code := movedDiff(t, "helmrelease", "web", "-n", ns)
		deploy := "Deployment.apps " + ns + "/web"
		checksum := "spec.template.metadata.annotations.checksum/secret"
		if got := strings.Join(rep.rows(), "\n"); code != 2 || got != deploy+"|"+checksum+"|chart|render-dependent" || rep.Drift != 0 || rep.Changes != 1 {
			t.Fatalf("untouched: exit %d, rows:\n%s\nwant exit 2 and only the checksum, moved by the chart, render-dependent\n%s", code, got, out)
		}
		table, code := hrDiff(t, "web", "-n", ns)
		if code != 2 || !hasRow(table, "checksum/secret", "chart", "no: drift correction leaves it") || !strings.Contains(table, "0 drift, 1 changes an upgrade brings") {
			t.Errorf("table: exit %d, want the checksum moved by the chart and left by drift correction\n%s", code, table)
		}
		if out, code := hrDiff(t, "web", "-n", ns, "--exit-code-on", "drift"); code != 0 {
			t.Errorf("--exit-code-on drift, nothing drifted: exit %d, want 0\n%s", code, out)
		}
		if out, code := hrDiff(t, "--all", "-n", ns, "--exit-code-on", "drift"); code != 0 {
			t.Errorf("--all --exit-code-on drift, nothing drifted: exit %d, want 0\n%s", code, out)
		}
		predicted := rep.chartValue(checksum)
		forceReconcile(t, ns, 2)
		obj, err := cluster.Dynamic.Resource(deployments).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ann, _, _ := nestedString(obj.Object, "spec", "template", "metadata", "annotations", "checksum/secret")
		if ann != predicted {
			t.Errorf("after the forced reconcile the checksum is %q; diff helmrelease predicted %v", ann, predicted)
		}
		if _, code := hrDiff(t, "web", "-n", ns); code != 0 {
			t.Errorf("after the forced reconcile: exit %d, want 0 (the chart renders the same value from now on)", code)
		}
	})
	t.Run("will fail", func(t *testing.T) {
		// A values change the API server refuses: WILL-FAIL for the upgrade the next
		// reconcile makes, which then fails on that object.
		ns := cluster.Namespace(t)
		chartHelmRelease(t, ns, "refusals")
		if _, code := hrDiff(t, "web", "-n", ns); code != 0 {
			t.Fatalf("fresh install: exit %d, want 0", code)
		}
		// The change as a pull request would bring it: the HelmRelease as written, previewed
		// with --file before anything reaches the cluster.
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]any{"apiVersion": hr.GetAPIVersion(), "kind": hr.GetKind(),
			"metadata": map[string]any{"name": "web", "namespace": ns}, "spec": hr.Object["spec"]}
		written["spec"].(map[string]any)["values"] = map[string]any{"selector": "v2"}
		file := filepath.Join(t.TempDir(), "web-hr.yaml")
		data, _ := json.Marshal(written)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		table, code := hrDiff(t, "--file", file)
		if code != 2 || !strings.Contains(table, "next reconcile: upgrade") || !strings.Contains(table, "this upgrade will fail") ||
			!strings.Contains(table, "WILL-FAIL  Deployment.apps "+ns+"/web-web: 422 Invalid: spec.selector") {
			t.Errorf("selector changed in the HelmRelease's values: exit %d, want the upgrade predicted to fail on Deployment web-web\n%s", code, table)
		}
		applyYAML(t, string(data))
		testenv.Eventually(t, 2*time.Minute, "helm-controller's upgrade fails", func() (bool, string) {
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			msg := conditionMessage(hr, "Ready")
			return condition(hr, "Ready") == "False" && strings.Contains(msg, "web-web") && strings.Contains(msg, "field is immutable"), msg
		})
	})
	t.Run("generated", func(t *testing.T) {
		ns := cluster.Namespace(t)
		chartHelmRelease(t, ns, "certapp")
		rep, out, code := zooDiff(t, "helmrelease", "web", "-n", ns)
		unstable := 0
		for _, o := range rep.Objects {
			for _, d := range o.Rows {
				if d.Unstable {
					unstable++
				} else {
					t.Errorf("%s %s: a row not flagged unstable", o.Object, d.Path)
				}
			}
		}
		if code != 0 || rep.Divergences != 0 || unstable != 4 {
			t.Errorf("generated certificate and password: exit %d, %d divergences, %d unstable rows; want 0, 0, 4 (tls.crt, tls.key, password, the checksum)\n%s", code, rep.Divergences, unstable, out)
		}
		if strings.Contains(out, "BEGIN") {
			t.Errorf("a certificate or key printed:\n%s", out)
		}
		if _, code := hrDiff(t, "web", "-n", ns, "--count-unstable"); code != 2 {
			t.Errorf("--count-unstable: exit %d, want 2", code)
		}
	})
}

// nestedString reads a string field of obj.
func nestedString(obj map[string]any, path ...string) (string, bool, error) {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false, nil
		}
		v = m[k]
	}
	s, ok := v.(string)
	return s, ok, nil
}
