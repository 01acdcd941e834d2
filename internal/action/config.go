// Package action does the commands' work, as Helm's pkg/action and helm-controller's
// internal/action do: each verb is a struct whose exported fields the command line fills and
// whose methods return typed results the command line prints. It never parses a flag and never
// prints.
package action

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	action4 "helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/live"
)

// KubeOptions choose the cluster, as Helm's --kubeconfig, --kube-context and a request timeout.
type KubeOptions struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG, else ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context; empty: its current context.
	Context string
	// Timeout bounds one request to the API server (default 30s).
	Timeout time.Duration
	// Stop, when set, cancels every request of the configuration once it is done, those made
	// by code that passes no context of its own (the Helm SDKs' storage, discovery) included:
	// a long-running server stops a run at once on SIGTERM.
	Stop context.Context
}

// Configuration is the cluster access of one run: the kubeconfig loaded once, one rest.Config
// and one in-memory discovery cache shared by every client made from it (Helm's own getter
// reloads the kubeconfig and reads its on-disk discovery cache for every object it builds: on
// a 1,000-object release that was 11 of a diff's 12 seconds), and the requests counted.
type Configuration struct {
	// Counts counts the requests of every client made from this configuration.
	Counts *live.Counts

	loader  clientcmd.ClientConfig
	config  *rest.Config
	context string
	disc    discovery.CachedDiscoveryInterface
	mapper  meta.RESTMapper

	mu   sync.Mutex
	live *live.Client
	snap *diff.Snapshot
}

// Made counts the kubeconfig loads and discovery clients that configurations made, so that a
// test can hold a run to one of each.
var Made struct {
	Kubeconfigs, DiscoveryClients atomic.Int64
}

// NewConfiguration loads the kubeconfig; an unreadable one is an error naming it. Requests are
// counted in counts (nil: counts of its own).
func NewConfiguration(o KubeOptions, counts *live.Counts) (*Configuration, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	Made.Kubeconfigs.Add(1)
	contextName := o.Context
	if contextName == "" {
		if raw, err := loader.RawConfig(); err == nil {
			contextName = raw.CurrentContext
		}
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	cfg.Timeout = o.Timeout
	// No client-side throttling (client-go's default is 5 requests a second): callers bound
	// their own concurrency, and the API server's priority and fairness does the rest.
	cfg.QPS = -1
	if counts == nil {
		counts = &live.Counts{}
	}
	cfg.Wrap(counts.Wrap)
	if o.Stop != nil {
		cfg.Wrap(stopWith(o.Stop))
	}
	cfg.Wrap((&versionOnce{}).wrap) // outermost: an answer from it is no request
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	Made.DiscoveryClients.Add(1)
	cached := &snapshot{CachedDiscoveryInterface: memory.NewMemCacheClient(dc)}
	return &Configuration{Counts: counts, loader: loader, config: cfg, context: contextName, disc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

// Context is the kubeconfig context the configuration uses (its current context when none was
// asked for); Server the API server's URL.
func (c *Configuration) Context() string { return c.context }

// Server is the API server's URL.
func (c *Configuration) Server() string { return c.config.Host }

// Contexts lists the contexts of the kubeconfig (empty: $KUBECONFIG, else ~/.kube/config),
// sorted; none is an error naming the file.
func Contexts(kubeconfig string) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	if len(names) == 0 {
		where := kubeconfig
		if where == "" {
			where = strings.Join(rules.GetLoadingPrecedence(), ", ")
		}
		return nil, fmt.Errorf("--all-contexts: the kubeconfig (%s) has no context", where)
	}
	sort.Strings(names)
	return names, nil
}

// RESTConfig returns a copy of the one rest.Config.
func (c *Configuration) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// Getter is the Helm SDKs' view of the configuration for namespace ("" for all): a
// genericclioptions.RESTClientGetter over the shared config and discovery cache.
func (c *Configuration) Getter(namespace string) *RESTGetter {
	return &RESTGetter{c: c, loader: namespaced{base: c.loader, namespace: namespace}}
}

// Helm3 is the Helm 3 SDK's action configuration with release storage in namespace.
func (c *Configuration) Helm3(namespace string) (*helmaction.Configuration, error) {
	return c.helm3(namespace, nil)
}

// helm3 is Helm3 with the storage's queries answered by reads (nil: by the storage).
func (c *Configuration) helm3(namespace string, reads *releaseReads) (*helmaction.Configuration, error) {
	cfg := new(helmaction.Configuration)
	if c == nil {
		// No cluster: a client-only install sets its own capabilities, kube client and
		// storage in memory (see RenderUpgrade).
		cfg.Log = func(string, ...any) {}
		return cfg, nil
	}
	if err := cfg.Init(c.Getter(namespace), namespace, os.Getenv("HELM_DRIVER"), func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm storage: %w", err)
	}
	if reads != nil {
		cfg.Releases.Driver = shared3{cfg.Releases.Driver, reads}
	}
	return cfg, nil
}

// Helm4 is the Helm 4 SDK's action configuration with release storage in namespace.
func (c *Configuration) Helm4(namespace string) (*action4.Configuration, error) {
	return c.helm4(namespace, nil)
}

// helm4 is Helm4 with the storage's queries answered by reads (nil: by the storage).
func (c *Configuration) helm4(namespace string, reads *releaseReads) (*action4.Configuration, error) {
	cfg := action4.NewConfiguration()
	if c == nil {
		return cfg, nil // as helm3
	}
	if err := cfg.Init(c.Getter(namespace), namespace, os.Getenv("HELM_DRIVER")); err != nil {
		return nil, fmt.Errorf("helm storage: %w", err)
	}
	if reads != nil {
		cfg.Releases.Driver = shared4{cfg.Releases.Driver, reads}
	}
	return cfg, nil
}

// Snapshot is the run's one read of the cluster (a diff.Snapshot over Live), made once: every
// measurement over many releases made from this configuration shares it, so that serve's
// diff release and diff helmrelease read each kind in each namespace once between them.
func (c *Configuration) Snapshot(ctx context.Context) (*diff.Snapshot, error) {
	cl, err := c.Live(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		c.snap = diff.NewSnapshot(cl)
	}
	return c.snap, nil
}

// Live is the client that reads the cluster's objects, made once.
func (c *Configuration) Live(ctx context.Context) (*live.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != nil {
		return c.live, nil
	}
	cl, err := live.NewShared(ctx, c.RESTConfig(), c.Counts, c.disc, c.mapper)
	if err != nil {
		return nil, err
	}
	c.live = cl
	return cl, nil
}

// snapshot is the run's discovery cache, read once: a run measures one snapshot of the cluster
// (as it compares one LIST per kind), so the invalidations the Helm SDKs make before every
// render (to see CRDs an install just created; a dry run creates none) are not passed on, and
// the server's version, which the SDKs ask before every render, is asked once.
type snapshot struct {
	discovery.CachedDiscoveryInterface

	once    sync.Once
	version *version.Info
	err     error
}

// Invalidate keeps the snapshot.
func (*snapshot) Invalidate() {}

// ServerVersion asks the server once a run.
func (s *snapshot) ServerVersion() (*version.Info, error) {
	s.once.Do(func() { s.version, s.err = s.CachedDiscoveryInterface.ServerVersion() })
	return s.version, s.err
}

// ServiceProxy fetches a path from an in-cluster service through the API server's proxy
// (GET /api/v1/namespaces/NS/services/http:SVC:PORT/proxy/PATH; needs get on services/proxy).
func (c *Configuration) ServiceProxy() (func(ctx context.Context, ns, svc, port, path string) ([]byte, error), error) {
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ns, svc, port, path string) ([]byte, error) {
		return kc.CoreV1().Services(ns).ProxyGet("http", svc, port, path, nil).DoRaw(ctx)
	}, nil
}

// RESTGetter gives the Helm SDK the configuration's one rest.Config and discovery cache.
type RESTGetter struct {
	c      *Configuration
	loader clientcmd.ClientConfig
}

// ToRESTConfig returns a copy of the one config.
func (g *RESTGetter) ToRESTConfig() (*rest.Config, error) { return g.c.RESTConfig(), nil }

// ToDiscoveryClient returns the shared in-memory discovery cache.
func (g *RESTGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.c.disc, nil
}

// ToRESTMapper returns the mapper over the shared discovery cache.
func (g *RESTGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.c.mapper, nil }

// ToRawKubeConfigLoader returns the kubeconfig loader, whose namespace is the getter's (Helm
// reads the namespace from it).
func (g *RESTGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.loader }

// namespaced is the run's kubeconfig loader with another namespace.
type namespaced struct {
	base      clientcmd.ClientConfig
	namespace string
}

// RawConfig returns the kubeconfig as loaded.
func (n namespaced) RawConfig() (clientcmdapi.Config, error) { return n.base.RawConfig() }

// ClientConfig returns the rest.Config of the chosen context.
func (n namespaced) ClientConfig() (*rest.Config, error) { return n.base.ClientConfig() }

// ConfigAccess returns the loader's config access.
func (n namespaced) ConfigAccess() clientcmd.ConfigAccess { return n.base.ConfigAccess() }

// Namespace returns the getter's namespace, else the kubeconfig's.
func (n namespaced) Namespace() (string, bool, error) {
	if n.namespace != "" {
		return n.namespace, true, nil
	}
	return n.base.Namespace()
}

// Connect makes the live client, once: an unreachable cluster is an error naming it.
func (c *Configuration) Connect(ctx context.Context) error {
	_, err := c.Live(ctx)
	return err
}

// Connection is a run's cluster, configured at most once however many of the run's steps ask
// for it (render --self --cluster asks twice: the bracket lookup and the owners check).
type Connection struct {
	// Options choose the cluster.
	Options KubeOptions

	once sync.Once
	cfg  *Configuration
	err  error
}

// Configuration returns the run's one configuration, made on the first call.
func (c *Connection) Configuration() (*Configuration, error) {
	c.once.Do(func() { c.cfg, c.err = NewConfiguration(c.Options, nil) })
	return c.cfg, c.err
}

// timeout is the longest one request may take.
func (c *Connection) timeout() time.Duration {
	if c.Options.Timeout == 0 {
		return 30 * time.Second
	}
	return c.Options.Timeout
}

// kubeVersion is the API server's version, asked once a run.
func (c *Configuration) kubeVersion() (*version.Info, error) { return c.disc.ServerVersion() }

// versionOnce answers GET /version once a run: the server's version does not change within
// it, and the Helm SDKs ask it before every render (their reachability probe, through a
// clientset of their own that the discovery snapshot does not reach).
type versionOnce struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
}

// wrap is a rest.Config transport wrapper.
func (v *versionOnce) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet || r.URL.Path != "/version" {
			return rt.RoundTrip(r)
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.body == nil {
			resp, err := rt.RoundTrip(r)
			if err != nil || resp.StatusCode != http.StatusOK {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, err
			}
			v.body, v.header = body, resp.Header.Clone()
		}
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: v.header.Clone(), Body: io.NopCloser(bytes.NewReader(v.body)), ContentLength: int64(len(v.body)), Request: r}, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stopWith returns a transport wrapper that cancels each request once stop is done (and
// refuses new ones), whatever context the caller gave it; the request's own context is
// released when its response body is closed.
func stopWith(stop context.Context) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if err := context.Cause(stop); err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancelCause(r.Context())
			release := context.AfterFunc(stop, func() { cancel(context.Cause(stop)) })
			res, err := rt.RoundTrip(r.WithContext(ctx))
			if err != nil {
				release()
				cancel(nil)
				return nil, err
			}
			res.Body = &releasingBody{ReadCloser: res.Body, release: func() { release(); cancel(nil) }}
			return res, nil
		})
	}
}

// releasingBody runs release once the body is closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

// Close closes the body and releases its request's context.
func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
