package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/cli"
)

// discoveryCounter is a proxy in front of the test API server that counts the requests for the
// discovery roots (GET /api, GET /apis): every discovery cache a client makes reads each once.
type discoveryCounter struct {
	mu    sync.Mutex
	roots int
}

func (d *discoveryCounter) kubeconfig(t *testing.T) string {
	return proxyToCluster(t, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if r.Method == http.MethodGet && (r.URL.Path == "/api" || r.URL.Path == "/apis") {
			d.mu.Lock()
			d.roots++
			d.mu.Unlock()
		}
		forward.ServeHTTP(w, r)
	})
}

// runInProcess runs helm-drift's command line in this process and returns the kubeconfig
// loads and discovery clients the run's configurations made, and the discovery root requests
// the API server saw.
func runInProcess(t *testing.T, stdin string, args ...string) (loads, clients int64, roots int, out string) {
	t.Helper()
	var d discoveryCounter
	args = append(args, "--kubeconfig", d.kubeconfig(t))
	l0, c0 := action.Made.Kubeconfigs.Load(), action.Made.DiscoveryClients.Load()
	var stdout, stderr bytes.Buffer
	code := cli.Run(args, strings.NewReader(stdin), &stdout, &stderr)
	if code != cli.ExitOK && code != cli.ExitDrift {
		t.Fatalf("helm-drift %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return action.Made.Kubeconfigs.Load() - l0, action.Made.DiscoveryClients.Load() - c0, d.roots, stdout.String()
}

// TestDiffOneConfiguration: one diff upgrade (of a release written by Helm 3 and by Helm 4: the
// engine choice, the render and the measurement), one diff helmrelease and one render --self
// --cluster load the kubeconfig once and make one discovery client, whose cache reads each
// discovery root once.
func TestDiffOneConfiguration(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run("upgrade/"+helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			chart := filepath.Join(repoRoot, "testdata/charts/webapp")
			h.run(t, false, nil, "install", "web", chart, "-n", ns)
			loads, clients, roots, out := runInProcess(t, "", "diff", "upgrade", "web", chart, "-n", ns, "--set", "image=nginx:1.28")
			if !strings.Contains(out, "nginx:1.28") {
				t.Errorf("diff upgrade did not measure the upgrade:\n%s", out)
			}
			if loads != 1 || clients != 1 || roots != 2 {
				t.Errorf("one diff upgrade: %d kubeconfig loads, %d discovery clients, %d discovery root requests; want 1, 1, 2 (/api and /apis once)", loads, clients, roots)
			}
		})
	}
	t.Run("helmrelease", func(t *testing.T) {
		h := clusterHelm(t, "helm4")
		ns := cluster.Namespace(t)
		dir := t.TempDir()
		h.run(t, false, nil, "package", filepath.Join(repoRoot, "testdata/charts/webapp"), "-d", dir)
		repo := "oci://" + cluster.Registry + "/cfg-" + ns
		h.run(t, false, nil, "push", filepath.Join(dir, "webapp-1.0.0.tgz"), repo, "--plain-http")
		applyYAML(t, webappSource(ns, repo)+fmt.Sprintf(`
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %s}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: webapp}
  install: {disableWait: true}
  upgrade: {disableWait: true}`, ns))
		waitHistory(t, ns, 1)
		loads, clients, roots, out := runInProcess(t, "", "diff", "helmrelease", "web", "-n", ns)
		if !strings.Contains(out, "HelmRelease "+ns+"/web") {
			t.Errorf("diff helmrelease did not measure the HelmRelease:\n%s", out)
		}
		if loads != 1 || clients != 1 || roots != 2 {
			t.Errorf("one diff helmrelease: %d kubeconfig loads, %d discovery clients, %d discovery root requests; want 1, 1, 2 (/api and /apis once)", loads, clients, roots)
		}
	})
	t.Run("render --self --cluster", func(t *testing.T) {
		// The bracket lookup and the owners check against the cluster share one configuration.
		ns := cluster.Namespace(t)
		stream := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\n", ns)
		loads, clients, roots, out := runInProcess(t, stream, "render", "--self", "--install", "--cluster", "--release", "app", "-n", ns,
			"--self-repository", "oci://"+cluster.Registry+"/charts", "--chart-name", "app", "--chart-version", "1.0.0")
		if !strings.Contains(out, "kind: HelmRelease") || !strings.Contains(out, "suspend: true") {
			t.Errorf("render --self did not render the pair suspended:\n%s", out)
		}
		if loads != 1 || clients != 1 || roots != 2 {
			t.Errorf("one render --self --cluster: %d kubeconfig loads, %d discovery clients, %d discovery root requests; want 1, 1, 2", loads, clients, roots)
		}
	})
}
