package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"

	"github.com/helm-drift/helm-drift/internal/live"
)

// kubeOptions choose the cluster, with Helm's flag names and environment fallbacks.
type kubeOptions struct {
	kubeconfig  string
	kubeContext string
	timeout     time.Duration
}

// BindFlags registers --kubeconfig, --kube-context and --request-timeout on fs.
func (o *kubeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "kube-context", envOr("HELM_KUBECONTEXT", ""), "the kubeconfig context to use")
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "the longest one request to the API server may take")
}

// connect returns a client of the chosen cluster, or an error saying why it is unreachable.
func (o *kubeOptions) connect(ctx context.Context) (*live.Client, error) {
	return live.New(ctx, live.Options{Kubeconfig: o.kubeconfig, Context: o.kubeContext, Timeout: o.timeout})
}

// restGetter gives the Helm SDK one rest.Config and one in-memory discovery cache for the whole
// run. Helm's own getter reloads the kubeconfig and reads its on-disk discovery cache for
// every object it builds: on a 1,000-object release that was 11 of a diff's 12 seconds.
type restGetter struct {
	loader clientcmd.ClientConfig
	config *rest.Config
	disc   discovery.CachedDiscoveryInterface
	mapper meta.RESTMapper
}

// newRESTGetter loads the kubeconfig once; requests are counted in counts.
func (o *kubeOptions) newRESTGetter(namespace string, counts *live.Counts) (*restGetter, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}
	overrides.Context.Namespace = namespace
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = o.timeout
	cfg.QPS = -1 // no client-side throttling; see live.New
	cfg.Wrap(counts.Wrap)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return &restGetter{loader: loader, config: cfg, disc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

// ToRESTConfig returns a copy of the one config.
func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

// ToDiscoveryClient returns the shared in-memory discovery cache.
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disc, nil
}

// ToRESTMapper returns the mapper over the shared discovery cache.
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

// ToRawKubeConfigLoader returns the kubeconfig loader (Helm reads the namespace from it).
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.loader }

// helmConfiguration returns the Helm SDK's action configuration for namespace ("" for all),
// over one restGetter (requests counted in counts), and that getter.
func (o *kubeOptions) helmConfiguration(namespace string, counts *live.Counts) (*action.Configuration, *restGetter, error) {
	getter, err := o.newRESTGetter(namespace, counts)
	if err != nil {
		return nil, nil, err
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(getter, namespace, os.Getenv("HELM_DRIVER"), func(string, ...any) {}); err != nil {
		return nil, nil, fmt.Errorf("helm storage: %w", err)
	}
	return cfg, getter, nil
}
