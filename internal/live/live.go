// Package live reads the cluster: the scope of kinds and the metadata of live objects, with one
// LIST per kind and namespace and never a GET per object of a stream; List reads metadata
// only, so no Secret's data reaches this process through it. Get reads the few objects a
// HelmRelease refers to (its source, its valuesFrom). It never writes: DryRunCreate asks the
// API server what it would store, with dryRun=All, and nothing is persisted.
package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotServed: the cluster does not serve the kind (no CRD for it).
var ErrNotServed = errors.New("kind not served by the cluster")

// Meta is what the checks need of a live object.
type Meta struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// Client reads the cluster.
type Client struct {
	// Server is the API server's address, for messages.
	Server string
	// Counts counts the requests this client made.
	Counts *Counts
	// Version is the API server's version ("v1.34.2").
	Version string
	mapper  meta.RESTMapper
	md      metadata.Interface
	dynamic dynamic.Interface
	// rest reads LISTs as they arrive (listStream).
	rest rest.Interface
	// listByNameDenied: a LIST by name was forbidden once (get without list): GETs from then on.
	listByNameDenied atomic.Bool
}

// ServerVersion is the API server's version ("v1.34.2").
func (c *Client) ServerVersion() string { return c.Version }

// Options choose the cluster the way Helm does: --kubeconfig (else $KUBECONFIG, else
// ~/.kube/config) and --kube-context.
type Options struct {
	Kubeconfig string
	Context    string
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
}

// New connects to the cluster and checks that it answers.
func New(ctx context.Context, o Options) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	cfg.Timeout = o.Timeout
	// No client-side throttling (client-go's default is 5 requests a second): callers bound
	// their own concurrency, and the API server's priority and fairness does the rest.
	cfg.QPS = -1
	return NewForConfig(ctx, cfg)
}

// NewForConfig connects with a rest.Config and checks that the API server answers.
func NewForConfig(ctx context.Context, cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	counts := &Counts{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counts.Wrap(rt) })
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return NewShared(ctx, cfg, counts, cached, restmapper.NewDeferredDiscoveryRESTMapper(cached))
}

// NewShared connects with a rest.Config whose requests counts already counts, sharing a run's
// discovery cache and REST mapper, and checks that the API server answers.
func NewShared(ctx context.Context, cfg *rest.Config, counts *Counts, disc discovery.CachedDiscoveryInterface, mapper meta.RESTMapper) (*Client, error) {
	sv, err := disc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cluster %s unreachable: %w", cfg.Host, err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return nil, err
	}
	return &Client{Server: cfg.Host, Counts: counts, Version: sv.GitVersion, mapper: mapper, md: md, dynamic: dyn, rest: rc}, nil
}

// mapping finds how the cluster serves group/kind, preferring version.
func (c *Client) mapping(group, version, kind string) (*meta.RESTMapping, error) {
	gk := schema.GroupKind{Group: group, Kind: kind}
	m, err := c.mapper.RESTMapping(gk, version)
	if err != nil {
		m, err = c.mapper.RESTMapping(gk) // another version of the same kind
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("%s.%s: %w", kind, group, ErrNotServed)
	}
	return m, err
}

// Namespaced reports whether the cluster serves group/kind as a namespaced kind.
func (c *Client) Namespaced(group, version, kind string) (bool, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// List returns the metadata of every object of group/kind in namespace ("" for a
// cluster-scoped kind), with one LIST call (paged).
func (c *Client) List(ctx context.Context, group, version, kind, namespace string) ([]Meta, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return nil, err
	}
	res := c.md.Resource(m.Resource)
	var out []Meta
	err = listPages(ctx, m, namespace, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		var list *metav1.PartialObjectMetadataList
		var err error
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			list, err = res.Namespace(namespace).List(ctx, opts)
		} else {
			list, err = res.List(ctx, opts)
		}
		if err != nil {
			return "", err
		}
		for _, it := range list.Items {
			out = append(out, Meta{Name: it.Name, Labels: it.Labels, Annotations: it.Annotations})
		}
		return list.Continue, nil
	})
	return out, err
}

// listPages calls page with Limit 500 and each continue token until the last page.
func listPages(ctx context.Context, m *meta.RESTMapping, namespace string, page func(context.Context, metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		next, err := page(ctx, opts)
		if err != nil {
			return fmt.Errorf("list %s in %q: %w", m.Resource.String(), namespace, err)
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// Get returns one object as unstructured content (used for the few objects a HelmRelease
// refers to: its OCIRepository or HelmRepository, its valuesFrom ConfigMaps and Secrets; and
// CustomResourceDefinitions, see listedByName).
func (c *Client) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return nil, err
	}
	if listedByName(m) && !c.listByNameDenied.Load() {
		obj, err := c.listByName(ctx, m, namespace, name)
		if !apierrors.IsForbidden(err) {
			return obj, err
		}
		c.listByNameDenied.Store(true) // allowed to get, not to list: get
	}
	res := c.dynamic.Resource(m.Resource)
	var obj *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		obj, err = res.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	} else {
		obj, err = res.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	return obj.Object, nil
}

// listedByName reports whether objects of m are read with a LIST of one name rather than a GET:
// CustomResourceDefinitions, a cluster's largest objects. A GET without a resourceVersion is
// read from etcd and decoded there again; a LIST of one name (fieldSelector metadata.name,
// which the API server narrows to that one key) is answered from its watch cache, as
// consistently as the GET (Kubernetes 1.31 on; before, from etcd like the GET). On a chart
// with ten large CRDs (4.5 MB), the GETs were a third of the API server's work for the whole
// diff.
func listedByName(m *meta.RESTMapping) bool {
	return m.Resource.Group == "apiextensions.k8s.io" && m.Resource.Resource == "customresourcedefinitions"
}

// listByName reads the object name of m with a LIST of that name; NotFound, as a GET's, when
// the LIST holds none.
func (c *Client) listByName(ctx context.Context, m *meta.RESTMapping, namespace, name string) (map[string]any, error) {
	items, _, err := listStream(ctx, c.rest, m, namespace, url.Values{"fieldSelector": {"metadata.name=" + name}})
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if md, _ := it["metadata"].(map[string]any); md != nil && md["name"] == name {
			return it, nil
		}
	}
	return nil, apierrors.NewNotFound(m.Resource.GroupResource(), name)
}

// ListObjects returns every object of group/kind in namespace ("" for a cluster-scoped kind)
// in full, with one LIST call (paged). Callers that may meet Secrets must not print their data.
func (c *Client) ListObjects(ctx context.Context, group, version, kind, namespace string) ([]map[string]any, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	err = listPages(ctx, m, namespace, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		q := url.Values{"limit": {fmt.Sprint(opts.Limit)}}
		if opts.Continue != "" {
			q.Set("continue", opts.Continue)
		}
		items, next, err := listStream(ctx, c.rest, m, namespace, q)
		out = append(out, items...)
		return next, err
	})
	return out, err
}

// DryRunCreate asks the API server to create obj with dryRun=All under name, and returns the
// object it would have stored: defaulted by the API server, the CRD's schema and admission.
// Kubernetes authorises it like a real create.
func (c *Client) DryRunCreate(ctx context.Context, obj map[string]any, name string) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := c.mapping(gvk.Group, gvk.Version, gvk.Kind)
	if err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	u.SetName(name)
	u.SetGenerateName("")
	u.SetResourceVersion("")
	res := c.dynamic.Resource(m.Resource)
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "helm-drift"}
	var out *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		out, err = res.Namespace(u.GetNamespace()).Create(ctx, u, opts)
	} else {
		u.SetNamespace("")
		out, err = res.Create(ctx, u, opts)
	}
	if err != nil {
		return nil, err
	}
	return out.Object, nil
}

// DryRunApply asks the API server to apply obj (server-side apply, dryRun=All, forced, as the
// field manager helm-drift) over the live object of its name, and returns the object it would
// have stored: the write an upgrade makes meets the same validation (immutable fields, schema)
// and admission (webhooks, policies) as a real one, and nothing is persisted. Kubernetes
// authorises it like a real patch.
func (c *Client) DryRunApply(ctx context.Context, obj map[string]any) (map[string]any, error) {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	gvk := u.GroupVersionKind()
	m, err := c.mapping(gvk.Group, gvk.Version, gvk.Kind)
	if err != nil {
		return nil, err
	}
	u.SetResourceVersion("")
	u.SetManagedFields(nil)
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	res := c.dynamic.Resource(m.Resource)
	opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "helm-drift", Force: ptrTrue()}
	var out *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		out, err = res.Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts)
	} else {
		out, err = res.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts)
	}
	if err != nil {
		return nil, err
	}
	return out.Object, nil
}

func ptrTrue() *bool { t := true; return &t }

// Resource returns the resource name (plural.group) the cluster serves group/kind under,
// as RBAC rules name it.
func (c *Client) Resource(group, version, kind string) (string, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return "", err
	}
	if m.Resource.Group == "" {
		return m.Resource.Resource, nil
	}
	return m.Resource.Resource + "." + m.Resource.Group, nil
}

// CRDSchema returns the openAPIV3Schema the CustomResourceDefinition of group/kind declares
// for version; nil for a kind no CRD defines.
func (c *Client) CRDSchema(ctx context.Context, group, version, kind string) (map[string]any, error) {
	return ReadCRDSchema(ctx, c, group, version, kind)
}

// CRDReader is what ReadCRDSchema reads a kind's CustomResourceDefinition through: the kind's
// resource name (the CRD's name) and a GET.
type CRDReader interface {
	Resource(group, version, kind string) (string, error)
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
}

// ReadCRDSchema reads the CustomResourceDefinition of group/kind through r and returns the
// openAPIV3Schema it declares for version (versionSchema).
func ReadCRDSchema(ctx context.Context, r CRDReader, group, version, kind string) (map[string]any, error) {
	res, err := r.Resource(group, version, kind)
	if err != nil {
		return nil, err
	}
	crd, err := r.Get(ctx, "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", res)
	if err != nil {
		return nil, err
	}
	return versionSchema(crd, version), nil
}

// versionSchema returns the openAPIV3Schema a CustomResourceDefinition (decoded) declares for
// version; nil when it declares none.
func versionSchema(crd map[string]any, version string) map[string]any {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] != version {
			continue
		}
		sch, _ := vm["schema"].(map[string]any)
		s, _ := sch["openAPIV3Schema"].(map[string]any)
		return s
	}
	return nil
}

// Counts counts requests by verb, for --stats and the benchmarks, and those the API server
// refused (403).
type Counts struct {
	list, get, create, apply, discovery, other, refused atomic.Int64
}

// String reads "12 requests: 3 LIST, 1 GET, 0 dry-run create, 0 dry-run apply, 8 discovery,
// 0 other", then "; 2 refused (403)" when some were.
func (c *Counts) String() string {
	l, g, cr, a, d, o := c.list.Load(), c.get.Load(), c.create.Load(), c.apply.Load(), c.discovery.Load(), c.other.Load()
	s := fmt.Sprintf("%d requests: %d LIST, %d GET, %d dry-run create, %d dry-run apply, %d discovery, %d other", l+g+cr+a+d+o, l, g, cr, a, d, o)
	if r := c.refused.Load(); r > 0 {
		s += fmt.Sprintf("; %d refused (403)", r)
	}
	return s
}

// Refused returns the number of requests the API server refused (403 Forbidden).
func (c *Counts) Refused() int64 { return c.refused.Load() }

// Lists returns the number of LIST requests.
func (c *Counts) Lists() int64 { return c.list.Load() }

// Total returns the number of requests.
func (c *Counts) Total() int64 {
	return c.list.Load() + c.get.Load() + c.create.Load() + c.apply.Load() + c.discovery.Load() + c.other.Load()
}

// Wrap returns rt counting each request.
func (c *Counts) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		c.count(r)
		res, err := rt.RoundTrip(r)
		if err == nil && res.StatusCode == http.StatusForbidden {
			c.refused.Add(1)
		}
		return res, err
	})
}

func (c *Counts) count(r *http.Request) {
	p := r.URL.Path
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/api" || p == "/apis" || p == "/version" || strings.HasPrefix(p, "/openapi") ||
		(parts[0] == "api" && len(parts) <= 2) || (parts[0] == "apis" && len(parts) <= 3):
		c.discovery.Add(1)
	case r.Method == http.MethodPost:
		c.create.Add(1)
	case r.Method == http.MethodPatch && r.URL.Query().Get("dryRun") != "":
		c.apply.Add(1)
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "" && isCollection(parts):
		c.list.Add(1)
	case r.Method == http.MethodGet:
		c.get.Add(1)
	default:
		c.other.Add(1)
	}
}

// isCollection tells a LIST (/api/v1/namespaces/ns/configmaps) from a GET of one object.
func isCollection(parts []string) bool {
	if len(parts) < 3 || parts[0] != "api" && parts[0] != "apis" {
		return false
	}
	rest := parts[2:] // after api/v1
	if parts[0] == "apis" {
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) != 2 {
		rest = rest[2:]
	}
	return len(rest) == 1
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
