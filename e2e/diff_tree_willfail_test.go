package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestDiffTreePredictsFailedUpgrade: a chart's next version that changes its Deployment's
// selector previews, with no cluster, as an upgrade that fails on that object (WILL-FAIL, the
// API server's update validation run offline); the real helm-controller's upgrade then fails,
// the API server refusing the selector, and the release stays at its first revision.
func TestDiffTreePredictsFailedUpgrade(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	v11 := filepath.Join(t.TempDir(), "webapp")
	copyDir(t, filepath.Join(repoRoot, "testdata/charts/webapp"), v11)
	replaceIn(t, filepath.Join(v11, "Chart.yaml"), "version: 1.0.0", "version: 1.1.0")
	replaceIn(t, filepath.Join(v11, "templates/all.yaml"), "      app: {{ .Release.Name }}\n  template:", "      app: {{ .Release.Name }}\n      tier: web\n  template:")
	replaceIn(t, filepath.Join(v11, "templates/all.yaml"), "        app: {{ .Release.Name }}\n    spec:", "        app: {{ .Release.Name }}\n        tier: web\n    spec:")
	charts := chartRepository(t, h, filepath.Join(repoRoot, "testdata/charts/webapp"), v11)
	files := func(version string) map[string]string {
		return map[string]string{"apps/web.yaml": fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: %[3]q, sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  values: {headless: true}
`, ns, charts, version)}
	}
	doc, out := offlinePreview(t, files("1.0.0"), files("1.1.0"))
	rep := doc.HelmReleases[0].Report
	refused := ""
	for _, o := range rep.Objects {
		if o.Refusal != nil {
			refused = o.Object + ": " + o.Refusal.Field
		}
	}
	if rep.WillFail != 1 || refused != "Deployment.apps "+ns+"/web: spec.selector" {
		t.Fatalf("preview: willFail %d, refused %q; want the Deployment's selector\n%s", rep.WillFail, refused, out)
	}

	applyYAML(t, files("1.0.0")["apps/web.yaml"])
	waitTreeRevision(t, ns, "web", 1)
	applyYAML(t, files("1.1.0")["apps/web.yaml"])
	var message string
	testenv.Eventually(t, 3*time.Minute, "HelmRelease "+ns+"/web's upgrade to fail", func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		message = conditionMessage(hr, "Ready")
		return condition(hr, "Ready") == "False" && strings.Contains(message, "1.1.0"), message
	})
	if !strings.Contains(message, "field is immutable") || !strings.Contains(message, "selector") {
		t.Errorf("helm-controller's upgrade: %q, want the API server's refusal of the selector", message)
	}
	if v := storedRelease(t, ns, "web").Version; v != 1 && storedRelease(t, ns, "web").Info.Status.String() == "deployed" {
		t.Errorf("release revision %d deployed after a failed upgrade", v)
	}
	t.Logf("predicted %s; helm-controller: %s", refused, message)
}
