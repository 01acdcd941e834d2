package e2e

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	action4 "helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/helm-drift/helm-drift/internal/kubeapis"
)

// TestOfflineAPIVersionsMatchDiscovery: what a render with no cluster offers at the test
// environment's release (v1.34.2) is what its real kube-apiserver serves, as helm-controller's
// render reads it (the Helm SDK's version set from discovery), for Kubernetes' own groups:
// every group version and kind it serves is offered, and no group version it does not serve.
// Kinds it does not list are allowed where they are of a version it serves (a scheme knows
// kinds that discovery does not list, such as request bodies); no alpha or beta version is
// among them.
func TestOfflineAPIVersionsMatchDiscovery(t *testing.T) {
	t.Parallel()
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := action4.GetVersionSet(dc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	offered, err := kubeapis.Offered(info.GitVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, v := range vs {
		if kubeapis.Builtin(v) {
			served = append(served, v)
		}
	}
	if len(served) < 50 {
		t.Fatalf("the API server %s lists %d built-in versions and kinds: %v", info.GitVersion, len(served), served)
	}
	// A subresource's kind of another group version (deployments/scale's Scale under apps/v1,
	// pods/eviction's Eviction under v1) is listed where the subresource is: no scheme
	// registers it there, and none is offered.
	known := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(known); err != nil {
		t.Fatal(err)
	}
	for _, v := range served {
		if slices.Contains(offered, v) {
			continue
		}
		if parts := strings.Split(v, "/"); len(parts) >= 2 && unicode.IsUpper(rune(parts[len(parts)-1][0])) {
			gv, err := schema.ParseGroupVersion(strings.Join(parts[:len(parts)-1], "/"))
			if err == nil && !known.Recognizes(gv.WithKind(parts[len(parts)-1])) {
				continue
			}
		}
		t.Errorf("%s serves %s, not offered offline", info.GitVersion, v)
	}
	for _, v := range offered {
		if slices.Contains(served, v) {
			continue
		}
		parts := strings.Split(v, "/")
		kind := len(parts) == 3 || len(parts) == 2 && !strings.Contains(parts[0], ".") && parts[0] == "v1"
		gv := strings.Join(parts[:len(parts)-1], "/")
		if !kind || strings.Contains(v, "alpha") || strings.Contains(v, "beta") || !slices.Contains(served, gv) {
			t.Errorf("offered offline at %s, not served by its API server: %s", info.GitVersion, v)
		}
	}
}
