package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// proxyToCluster serves a loopback TLS proxy in front of the test API server: handle gets every
// request and forward, which passes it on. It returns a kubeconfig for the proxy.
func proxyToCluster(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, forward http.Handler)) string {
	t.Helper()
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, proxy) }))
	t.Cleanup(srv.Close)
	return tokenKubeconfig(t, srv.URL, cluster.Config.BearerToken)
}

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// faultProxy forwards to the test API server and injects one fault into LIST requests of
// configmaps: slow, 429 throttling, 404 (a kind that went away), or a dropped connection (the
// server stopping mid-run).
func faultProxy(t *testing.T, fault string) string {
	t.Helper()
	return proxyToCluster(t, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
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
				dropConnection(w)
				return
			}
		}
		forward.ServeHTTP(w, r)
	})
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
// connection as when the server stops mid-run), diff reports the rest, says which objects it
// could not measure and why (naming the kind), and ends with exit 3. Never clean.
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
				// The other objects are measured (a failure is per object, not per run), and the
				// report says what could not be.
				if !strings.Contains(out, "could not measure") {
					t.Errorf("diff %s under %s: the report does not say what it could not measure:\n%s", strings.Join(args, " "), fault, out)
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

// TestDiffKindGone: a release whose custom resource's CRD was deleted: diff reports the object
// missing, and that an upgrade would fail for want of the CRD (exit 2), never clean.
func TestDiffKindGone(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	chart := t.TempDir()
	group := "gone-" + ns + ".example.com"
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: gone\nversion: 1.0.0\n",
		"crds/gadgets.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.%[1]s}
spec:
  group: %[1]s
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group),
		"templates/gadget.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: g\nspec: {size: 1}\n",
		"templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: b}\n",
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755)
		os.WriteFile(filepath.Join(chart, name), []byte(body), 0o644)
	}
	h.run(t, false, nil, "install", "gone", chart, "-n", ns)
	if err := cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Delete(context.Background(), "gadgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Gadget kind to go from discovery", func() (bool, string) {
		out, errOut, code := diffBinary(t, "release", "gone", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
		return code == 2 && hasRow(out, "Gadget."+group+" "+ns+"/g", "CHART-ONLY", "(whole object)", "no: fails: the cluster does not serve Gadget"), out + errOut
	})
	// The upgrade fails as helm upgrade fails, its objects built by neither render (a check
	// of the manifests stands for the Helm SDK's build): the new manifest's Gadget first.
	_, helmErr := h.run(t, true, nil, "upgrade", "gone", chart, "-n", ns, "--dry-run")
	out, errOut, code := diffBinary(t, "upgrade", "gone", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	want := `resource mapping not found for name: "g" namespace: "" from "": no matches for kind "Gadget" in version "` + group + `/v1"`
	if code != 1 || !strings.Contains(errOut, "rendering the upgrade of "+ns+"/gone: "+want) || out != "" {
		t.Errorf("diff upgrade with the Gadget kind gone: exit %d, want 1 and %s\n%s%s", code, want, out, errOut)
	}
	if !strings.Contains(helmErr, "UPGRADE FAILED: "+want) {
		t.Errorf("helm upgrade --dry-run fails otherwise than predicted (%s):\n%s", want, helmErr)
	}
}
