// Package live reads the cluster: the scope of kinds and the metadata of live objects, with one
// LIST per kind and namespace and never a GET per object of a stream; List reads metadata
// only, so no Secret's data reaches this process through it. Get reads the few objects a
// HelmRelease refers to (its source, its valuesFrom). It never writes.
package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	Server    string
	discovery discovery.DiscoveryInterface
	mapper    meta.RESTMapper
	md        metadata.Interface
	dynamic   dynamic.Interface
}

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
	cfg.QPS, cfg.Burst = 50, 100
	return NewForConfig(ctx, cfg)
}

// NewForConfig connects with a rest.Config and checks that the API server answers.
func NewForConfig(ctx context.Context, cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerVersion(); err != nil {
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
	cached := memory.NewMemCacheClient(dc)
	return &Client{Server: cfg.Host, discovery: dc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached), md: md, dynamic: dyn}, nil
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
// refers to: its OCIRepository or HelmRepository, its valuesFrom ConfigMaps and Secrets).
func (c *Client) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return nil, err
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

// ListObjects returns every object of group/kind in namespace ("" for a cluster-scoped kind)
// in full, with one LIST call (paged). Callers that may meet Secrets must not print their data.
func (c *Client) ListObjects(ctx context.Context, group, version, kind, namespace string) ([]map[string]any, error) {
	m, err := c.mapping(group, version, kind)
	if err != nil {
		return nil, err
	}
	res := c.dynamic.Resource(m.Resource)
	var out []map[string]any
	err = listPages(ctx, m, namespace, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		var list *unstructured.UnstructuredList
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
			out = append(out, it.Object)
		}
		return list.GetContinue(), nil
	})
	return out, err
}
