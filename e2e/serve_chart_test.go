package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestServeChart: charts/helm-drift lints (defaults, every optional part on, TLS from a Secret
// with namespaced Roles, and the plain unauthenticated mode), installs on
// the test environment with the real Helm 3 (the API server accepts every object), shows no
// divergence under diff release, and helm drift serve run as the chart's ServiceAccount (a
// token from the TokenRequest API: exactly the chart's RBAC) measures the cluster, the chart's
// own release included, at 0.
func TestServeChart(t *testing.T) {
	h := clusterHelm(t, "helm3")
	h.run(t, false, nil, "lint", "charts/helm-drift")
	h.run(t, false, nil, "lint", "charts/helm-drift", "--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,dashboard.enabled=true,serve.interval=1h30m,networkPolicy.enabled=true")
	h.run(t, false, nil, "lint", "charts/helm-drift", "--set", "serviceMonitor.enabled=true,serve.tls.secretName=drift-tls,serve.namespaces={a,b},scraper.subjects[0].kind=ServiceAccount,scraper.subjects[0].name=prometheus,scraper.subjects[0].namespace=monitoring")
	h.run(t, false, nil, "lint", "charts/helm-drift", "--set", "serviceMonitor.enabled=true,serve.auth=none,serve.tls.enabled=false")
	if _, errOut := h.run(t, true, nil, "template", "d", "charts/helm-drift", "--set", "serve.auth=basic"); !strings.Contains(errOut, `serve.auth "basic": want kubernetes or none`) {
		t.Errorf("a bad serve.auth: want the chart to say so:\n%s", errOut)
	}
	if _, errOut := h.run(t, true, nil, "template", "d", "charts/helm-drift", "--set", "prometheusRule.enabled=true,serve.interval=soon"); !strings.Contains(errOut, `serve.interval "soon": want a duration`) {
		t.Errorf("a bad interval: want the chart to say so:\n%s", errOut)
	}
	out, _ := h.run(t, false, nil, "template", "d", "charts/helm-drift", "--set", "prometheusRule.enabled=true,serve.interval=1h30m")
	if !strings.Contains(out, "> 10800) or absent(helm_drift_last_success_timestamp_seconds") {
		t.Errorf("the staleness alert is not two intervals of 1h30m:\n%s", out)
	}

	ns := cluster.Namespace(t)
	h.run(t, false, nil, "install", "drift", "charts/helm-drift", "-n", ns)
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "drift", "-n", ns) })
	if out, errOut, code := diffBinary(t, "release", "drift", "-n", ns, "--kubeconfig", cluster.Kubeconfig); code != 0 || !strings.Contains(out, " 0 divergences") {
		t.Fatalf("diff release of the chart: exit %d\n%s%s", code, out, errOut)
	}

	tok, err := cluster.Kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "drift-helm-drift", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := startServe(t, tokenKubeconfig(t, cluster.Config.Host, tok.Status.Token), "--auth=none", "--tls=false", "--namespaces="+ns)
	testenv.Eventually(t, 60*time.Second, "/readyz", func() (bool, string) {
		code, body := p.get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s\n%s", code, body, p.log())
	})
	mf := servedMetrics(t, p.url)
	own := map[string]string{"namespace": ns, "release": "drift", "kind": "release"}
	if v, ok := sample(mf, "helm_drift_compared_fields", own); !ok || v == 0 {
		t.Errorf("serve as the chart's ServiceAccount did not measure the chart's release:\n%s", p.log())
	}
	for _, class := range []string{"DIFFERS", "CHART-ONLY", "CLUSTER-ONLY", "SHADOWS"} {
		if v, _ := sample(mf, "helm_drift_divergences", map[string]string{"namespace": ns, "release": "drift", "kind": "release", "class": class}); v != 0 {
			t.Errorf("the chart's own release: %s = %v, want 0", class, v)
		}
	}
	if v, _ := sample(mf, "helm_drift_unmeasured_objects", own); v != 0 {
		t.Errorf("the chart's RBAC does not let serve read its own release: %v objects unmeasured\n%s", v, p.log())
	}
}
