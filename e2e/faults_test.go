package e2e

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// faultProxy forwards to the test API server and injects one fault into LIST requests of
// configmaps: slow, 429 throttling, 404 (a kind that went away), or a dropped connection (the
// server stopping mid-run).
func faultProxy(t *testing.T, fault string) string {
	t.Helper()
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps") {
			switch fault {
			case "slow":
				time.Sleep(3 * time.Second)
			case "throttled":
				w.Header().Set("Retry-After", "0")
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
				return
			case "gone":
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
				return
			case "dropped":
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return tokenKubeconfig(t, srv.URL, cluster.Config.BearerToken)
}

// TestOwnersClusterFaults: whatever the API server does to the LIST, owners --cluster ends
// with exit 3 and says it could not check; render fails with nothing on stdout. Never clean.
func TestOwnersClusterFaults(t *testing.T) {
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	for _, fault := range []string{"slow", "throttled", "gone", "dropped"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			kubeconfig := faultProxy(t, fault)
			for _, cmdName := range []string{"owners", "render"} {
				stdout, stderr, code := helmDrift(stream, cmdName, "--cluster", "--release=r", "-n", "default", "--kubeconfig", kubeconfig, "--request-timeout=1s")
				want := map[string]int{"owners": 3, "render": 1}[cmdName]
				if code != want || !strings.Contains(stderr, "could not check the cluster") {
					t.Errorf("%s under %s: exit %d (want %d)\nstdout: %s\nstderr: %s", cmdName, fault, code, want, stdout, stderr)
				}
				if cmdName == "render" && stdout != "" {
					t.Errorf("render under %s wrote to stdout", fault)
				}
			}
		})
	}
}

// TestDiffClusterFaults: whatever the API server does to the LIST of one kind of the release
// (slow past --request-timeout, 429 throttling, 404 for a kind that went away, a dropped
// connection as when the server stops mid-run), diff ends with exit 3 and names the kind it
// could not measure. Never clean.
func TestDiffClusterFaults(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns)
	for _, fault := range []string{"slow", "throttled", "gone", "dropped"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			kubeconfig := faultProxy(t, fault)
			for _, args := range [][]string{
				{"release", "web"},
				{"upgrade", "web", filepath.Join(repoRoot, "testdata/charts/webapp")},
				{"release", "--all"},
			} {
				out, errOut, code := diffBinary(t, append(args, "-n", ns, "--kubeconfig", kubeconfig, "--request-timeout=1s", "--normalize", "offline")...)
				if code != 3 || !strings.Contains(errOut, "could not measure") || !strings.Contains(errOut, "configmaps") {
					t.Errorf("diff %s under %s: exit %d (want 3, naming configmaps)\nstdout: %s\nstderr: %s", strings.Join(args, " "), fault, code, out, errOut)
				}
				if strings.Contains(out, "0 divergences") {
					t.Errorf("diff %s under %s reported clean:\n%s", strings.Join(args, " "), fault, out)
				}
			}
		})
	}
}

// TestSelfRenderUnreachable: render --self against a cluster that does not answer renders the
// self HelmRelease suspended (the safe side of the bracket) and warns, naming the HelmRelease.
func TestSelfRenderUnreachable(t *testing.T) {
	h := clusterHelm(t, "helm3")
	stream, _ := h.run(t, false, nil, "template", "app", "testdata/charts/selfapp", "-n", "apps")
	for _, kubeconfig := range []string{filepath.Join(t.TempDir(), "missing"), tokenKubeconfig(t, "https://127.0.0.1:1", "x")} {
		out, errOut := renderBinary(t, false, []byte(stream), "--self", "--release=app", "--namespace=apps",
			"--self-repository=oci://registry.example/charts/app", "--kubeconfig="+kubeconfig, "--request-timeout=2s")
		if !strings.Contains(out, "kind: HelmRelease") || !strings.Contains(out, "suspend: true") {
			t.Errorf("unreachable cluster: the self HelmRelease is not rendered suspended:\n%s", out)
		}
		if !strings.Contains(errOut, "could not look up HelmRelease apps/app") || !strings.Contains(errOut, "rendering it suspended") {
			t.Errorf("unreachable cluster: no warning naming the HelmRelease:\n%s", errOut)
		}
	}
}
