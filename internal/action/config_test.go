package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestServiceProxy: an artifact URL that names an in-cluster service is fetched through the API
// server's service proxy, at the path client-go's ProxyGet builds. The test environment's
// source-controller advertises a loopback address, which the API server does not proxy to, so
// this path is proven against a fake API server.
func TestServiceProxy(t *testing.T) {
	const want = "/api/v1/namespaces/flux-system/services/http:source-controller:80/proxy/ocirepository/apps/web/sha256:abc.tar.gz"
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		if r.URL.Path != want {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("chart bytes"))
	}))
	defer srv.Close()
	cfg, err := NewConfiguration(KubeOptions{Kubeconfig: fakeKubeconfig(t, srv.URL)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := cfg.ServiceProxy()
	if err != nil {
		t.Fatal(err)
	}
	data, err := proxy(context.Background(), "flux-system", "source-controller", "80", "/ocirepository/apps/web/sha256:abc.tar.gz")
	if err != nil || string(data) != "chart bytes" {
		t.Fatalf("proxy: %q, %v (the fake API server was asked %s)", data, err, got)
	}
}

// TestVersionOnce: the server's version is asked once a run, however many clientsets (the Helm
// SDKs' reachability probes) ask it, impersonating or not; other requests all go through.
func TestVersionOnce(t *testing.T) {
	var versions, others atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			versions.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.2"}`))
			return
		}
		others.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg, err := NewConfiguration(KubeOptions{Kubeconfig: fakeKubeconfig(t, srv.URL)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Configuration{cfg, cfg, cfg.As("system:serviceaccount:apps:deployer")} {
		kc, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		v, err := kc.Discovery().ServerVersion()
		if err != nil || v.GitVersion != "v1.34.2" {
			t.Fatalf("version %v, %v", v, err)
		}
		kc.CoreV1().ConfigMaps("apps").Get(context.Background(), "x", metav1.GetOptions{})
	}
	if versions.Load() != 1 || others.Load() != 3 {
		t.Errorf("the server was asked /version %d times and other paths %d; want 1 and 3", versions.Load(), others.Load())
	}
}

// fakeKubeconfig writes a kubeconfig for server with a bearer token.
func fakeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: `+server+`}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
users: [{name: fake, user: {token: t}}]
current-context: fake
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
