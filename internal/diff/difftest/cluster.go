// Package difftest holds a fake cluster for the tests of packages that measure with
// internal/diff: it answers from objects held in memory and counts its LISTs and GETs.
package difftest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/live"
)

// Cluster answers a measurement from objects held in memory, and counts its LISTs and GETs.
type Cluster struct {
	Objects   []map[string]any
	Forbidden map[string]bool           // kind → LIST refused
	NotServed map[string]bool           // kind → no such kind
	Refuse    error                     // what a dry-run apply answers
	Schemas   map[string]map[string]any // kind → its CRD's openAPIV3Schema

	mu    sync.Mutex
	Lists map[string]int // group/kind/namespace → LISTs
	Gets  map[string]int // group/kind/namespace → GETs
}

var scopes = map[string]bool{"ConfigMap": true, "Secret": true, "Service": true, "Widget": true, "Deployment": true, "ClusterRole": false}

func (f *Cluster) check(kind string) error {
	if f.NotServed[kind] {
		return fmt.Errorf("%s: %w", kind, live.ErrNotServed)
	}
	if f.Forbidden[kind] {
		return apierrors.NewForbidden(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, "", fmt.Errorf("RBAC says no"))
	}
	return nil
}

// Namespaced says the kinds of the fake's scope table are namespaced (a kind not served fails).
func (f *Cluster) Namespaced(_, _, kind string) (bool, error) {
	if f.NotServed[kind] {
		return false, live.ErrNotServed
	}
	return scopes[kind], nil
}

func (f *Cluster) matching(kind, namespace string) []map[string]any {
	var out []map[string]any
	for _, o := range f.Objects {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && (namespace == "" || md["namespace"] == namespace) {
			out = append(out, o)
		}
	}
	return out
}

// List names the held objects of kind in namespace (every namespace for "").
func (f *Cluster) List(_ context.Context, _, _, kind, namespace string) ([]live.Meta, error) {
	if err := f.check(kind); err != nil {
		return nil, err
	}
	var metas []live.Meta
	for _, o := range f.matching(kind, namespace) {
		md, _ := o["metadata"].(map[string]any)
		metas = append(metas, live.Meta{Name: md["name"].(string)})
	}
	return metas, nil
}

// count counts one request of kind in namespace in *m.
func (f *Cluster) count(m *map[string]int, group, kind, namespace string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[group+"/"+kind+"/"+namespace]++
}

// ListObjects returns the held objects of kind in namespace, counting the LIST.
func (f *Cluster) ListObjects(_ context.Context, group, _, kind, namespace string) ([]map[string]any, error) {
	f.count(&f.Lists, group, kind, namespace)
	if err := f.check(kind); err != nil {
		return nil, err
	}
	return f.matching(kind, namespace), nil
}

// Get returns the held object, or NotFound, counting the GET.
func (f *Cluster) Get(_ context.Context, group, _, kind, namespace, name string) (map[string]any, error) {
	f.count(&f.Gets, group, kind, namespace)
	if err := f.check(kind); err != nil {
		return nil, err
	}
	for _, o := range f.matching(kind, namespace) {
		if o["metadata"].(map[string]any)["name"] == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind) + "s"}, name)
}

// Resource is the kind's plural, lower case.
func (f *Cluster) Resource(_, _, kind string) (string, error) {
	return strings.ToLower(kind) + "s", nil
}

// CRDSchema is the kind's schema from Schemas (nil for none).
func (f *Cluster) CRDSchema(_ context.Context, _, _, kind string) (map[string]any, error) {
	return f.Schemas[kind], nil
}

// DryRunCreate stores nothing and defaults nothing: the object comes back as given.
func (f *Cluster) DryRunCreate(_ context.Context, obj map[string]any, _ string) (map[string]any, error) {
	return obj, nil
}

// ServerVersion is the version the fake claims.
func (f *Cluster) ServerVersion() string { return "v1.34.2" }

// Objects decodes a YAML stream into objects, as the cluster would hold them.
func Objects(t testing.TB, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(stream, "\n---\n") {
		var m map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// DryRunApply answers Refuse, else the object as given.
func (f *Cluster) DryRunApply(_ context.Context, obj map[string]any) (map[string]any, error) {
	if f.Refuse != nil {
		return nil, f.Refuse
	}
	return obj, nil
}
