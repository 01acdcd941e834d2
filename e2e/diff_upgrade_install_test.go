package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDiffUpgradeInstall: "diff upgrade --install" of a release that does not exist, with one
// of its objects already in the cluster and owned by nobody: the report says Helm would refuse
// that object (exit 2) and the real "helm upgrade --install" is refused; with --take-ownership
// it says Helm adopts it, and the real "helm upgrade --install --take-ownership" does, after
// which "diff release" finds nothing. Helm 3 and Helm 4.
func TestDiffUpgradeInstall(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-settings"}, Data: map[string]string{"LOG_LEVEL": "info"}}
			if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			kube := []string{"-n", ns, "--kubeconfig", cluster.Kubeconfig, "--engine", helmName}
			diffArgs := append([]string{"upgrade", "web", filepath.Join(repoRoot, "testdata/charts/webapp"), "--install"}, kube...)
			out, errOut, code := diffBinary(t, diffArgs...)
			if code != 2 || !strings.Contains(out, "REFUSED  ConfigMap "+ns+"/web-settings: it exists and is not this release's") ||
				!hasRow(out, "Deployment.apps "+ns+"/web", "CHART-ONLY", "(whole object)", "yes: created") ||
				!strings.Contains(out, "1 objects Helm refuses to adopt") {
				t.Fatalf("diff upgrade --install: exit %d\n%s%s", code, out, errOut)
			}
			if _, errOut := h.run(t, true, nil, "upgrade", "web", "testdata/charts/webapp", "--install", "-n", ns); !strings.Contains(errOut, "web-settings") {
				t.Errorf("helm upgrade --install was not refused on web-settings:\n%s", errOut)
			}
			out, errOut, code = diffBinary(t, append(diffArgs, "--take-ownership")...)
			if code != 2 || strings.Contains(out, "REFUSED") || !strings.Contains(out, "ADOPTED  ConfigMap "+ns+"/web-settings") {
				t.Fatalf("diff upgrade --install --take-ownership: exit %d\n%s%s", code, out, errOut)
			}
			h.run(t, false, nil, "upgrade", "web", "testdata/charts/webapp", "--install", "--take-ownership", "-n", ns)
			if out, errOut, code := diffBinary(t, "release", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig); code != 0 {
				t.Errorf("diff release after the adopting install: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// withDependency writes a chart that depends on testdata/charts/webapp through file://, with
// nothing in its charts/ directory.
func withDependency(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shop")
	os.MkdirAll(filepath.Join(dir, "templates"), 0o755)
	os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: shop\nversion: 0.1.0\ndependencies:\n- name: webapp\n  version: 1.0.0\n  repository: file://"+filepath.Join(repoRoot, "testdata/charts/webapp")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop}\ndata: {a: b}\n"), 0o644)
	return dir
}

// TestDiffUpgradeDependencyUpdate: a chart whose dependency is missing from charts/ fails "diff
// upgrade" as it fails "helm upgrade"; with --dependency-update, as helm upgrade
// --dependency-update, the dependency is fetched and the render (subchart included) equals the
// release installed that way: 0 divergences. Helm 3 and Helm 4.
func TestDiffUpgradeDependencyUpdate(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			h.run(t, false, nil, "upgrade", "--install", "shop", withDependency(t), "-n", ns, "--dependency-update")
			chart := withDependency(t)
			kube := []string{"upgrade", "shop", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig}
			if _, errOut, code := diffBinary(t, kube...); code != 1 || !strings.Contains(errOut, "--dependency-update") || !strings.Contains(errOut, "webapp") {
				t.Errorf("a missing dependency without --dependency-update: exit %d, want 1 naming it\n%s", code, errOut)
			}
			out, errOut, code := diffBinary(t, append(kube, "--dependency-update")...)
			if code != 0 || !strings.Contains(out, "0 divergences") || !strings.Contains(out, "in 5 objects") {
				t.Errorf("--dependency-update: exit %d, want 0 across the 5 objects (subchart included)\n%s%s", code, out, errOut)
			}
		})
	}
}
