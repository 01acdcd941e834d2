package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffHelmReleaseRemote: a HelmRelease installed in another cluster (spec.kubeConfig) is
// named as not compared, exit 3, rather than compared with this cluster, which holds neither
// its release nor its objects: on its own and among the namespace's others.
func TestDiffHelmReleaseRemote(t *testing.T) {
	t.Parallel()
	ns := cluster.Namespace(t)
	applyYAML(t, fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: spoke-web, namespace: %s}
spec:
  interval: 1h
  suspend: true
  kubeConfig: {secretRef: {name: spoke-kubeconfig}}
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
`, ns))
	want := "HelmRelease " + ns + "/spoke-web is installed in another cluster (spec.kubeConfig: the kubeconfig of Secret " + ns + "/spoke-kubeconfig), whose release and objects diff helmrelease does not read: not compared"
	for _, args := range [][]string{{"spoke-web", "-n", ns}, {"--all", "-n", ns}} {
		out, code := hrDiff(t, args...)
		if code != 3 || !strings.Contains(out, want) {
			t.Errorf("diff helmrelease %v: exit %d, want 3 and %q\n%s", args, code, want, out)
		}
	}
}
