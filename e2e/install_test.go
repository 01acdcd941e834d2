package e2e

import (
	"context"
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
