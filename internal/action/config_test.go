package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
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
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: `+srv.URL+`}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
users: [{name: fake, user: {token: t}}]
current-context: fake
`), 0o600)
	cfg, err := NewConfiguration(KubeOptions{Kubeconfig: kubeconfig}, nil)
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
