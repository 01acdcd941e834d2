package diff

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/helm-drift/helm-drift/internal/live"
)

// Snapshot is a Cluster that reads each kind's LIST in each namespace once for a whole run of
// many measurements (diff release --all, diff helmrelease --all) and answers every later one
// from it, so a run over N releases in a namespace costs one LIST per kind there, not N, and
// reads each object once. The objects, the few GETs (envFrom sources, a managing HelmRelease)
// and the CRD schemas are kept for the run and shared: a measurement never changes what a
// Cluster returns. Dry runs, scopes and discovery go to the wrapped Cluster. Safe for
// concurrent use; a LIST that fails is shared too (every release of that kind and namespace
// carries the error, as one run would).
type Snapshot struct {
	Cluster

	mu      sync.Mutex
	lists   map[listKey]*snapshotted[[]map[string]any]
	names   map[listKey]*snapshotted[map[string]map[string]any]
	asked   map[listKey]int
	gets    map[getKey]*snapshotted[map[string]any]
	schemas map[listKey]*snapshotted[map[string]any]
}

// snapshotted is one read, made once.
type snapshotted[T any] struct {
	once sync.Once
	done atomic.Bool
	val  T
	err  error
}

// do makes the read, once; every caller gets its outcome.
func (e *snapshotted[T]) do(read func() (T, error)) (T, error) {
	e.once.Do(func() {
		e.val, e.err = read()
		e.done.Store(true)
	})
	return e.val, e.err
}

type getKey struct {
	listKey
	name string
}

// NewSnapshot wraps cl.
func NewSnapshot(cl Cluster) *Snapshot {
	return &Snapshot{Cluster: cl, lists: map[listKey]*snapshotted[[]map[string]any]{},
		names: map[listKey]*snapshotted[map[string]map[string]any]{}, asked: map[listKey]int{},
		gets: map[getKey]*snapshotted[map[string]any]{}, schemas: map[listKey]*snapshotted[map[string]any]{}}
}

// once returns the entry of key in m, made when missing.
func once[K comparable, T any](mu *sync.Mutex, m map[K]*snapshotted[T], key K) *snapshotted[T] {
	mu.Lock()
	defer mu.Unlock()
	e := m[key]
	if e == nil {
		e = &snapshotted[T]{}
		m[key] = e
	}
	return e
}

// ListObjects lists kind in namespace once for the run.
func (s *Snapshot) ListObjects(ctx context.Context, group, version, kind, namespace string) ([]map[string]any, error) {
	return once(&s.mu, s.lists, listKey{group, version, kind, namespace}).do(func() ([]map[string]any, error) {
		return s.Cluster.ListObjects(ctx, group, version, kind, namespace)
	})
}

// Get reads an object once for the run: from its kind's LIST when the run has listed that
// kind in that namespace, else with a GET. From the second object of one kind and namespace
// asked for, the run lists that kind there once and answers from the list: a run over many
// releases asks for each one's managing HelmRelease, one LIST per namespace rather than one
// GET per release. A LIST the user may not make falls back on GETs.
func (s *Snapshot) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	k := listKey{group, version, kind, namespace}
	gk := getKey{k, name}
	s.mu.Lock()
	listed, got := s.lists[k], s.gets[gk]
	if listed == nil && got == nil && namespace != "" {
		if s.asked[k]++; s.asked[k] >= 2 {
			listed = &snapshotted[[]map[string]any]{}
			s.lists[k] = listed
		}
	}
	s.mu.Unlock()
	if listed != nil && (got == nil || listed.done.Load()) {
		if _, err := listed.do(func() ([]map[string]any, error) { return s.Cluster.ListObjects(ctx, group, version, kind, namespace) }); err == nil {
			if obj, ok := s.index(k, listed)[name]; ok {
				return obj, nil
			}
		}
	}
	return once(&s.mu, s.gets, gk).do(func() (map[string]any, error) {
		return s.Cluster.Get(ctx, group, version, kind, namespace, name)
	})
}

// index is a made LIST's objects by name, built once.
func (s *Snapshot) index(k listKey, listed *snapshotted[[]map[string]any]) map[string]map[string]any {
	ix, _ := once(&s.mu, s.names, k).do(func() (map[string]map[string]any, error) {
		ix := make(map[string]map[string]any, len(listed.val))
		for _, it := range listed.val {
			if md, _ := it["metadata"].(map[string]any); md != nil {
				if n, ok := md["name"].(string); ok {
					ix[n] = it
				}
			}
		}
		return ix, nil
	})
	return ix
}

// CRDSchema reads a kind's schema once for the run, from its CustomResourceDefinition as Get
// reads it: a run that compares a chart's CRDs reads each of them once, for both.
func (s *Snapshot) CRDSchema(ctx context.Context, group, version, kind string) (map[string]any, error) {
	return once(&s.mu, s.schemas, listKey{group: group, version: version, kind: kind}).do(func() (map[string]any, error) {
		return live.ReadCRDSchema(ctx, s, group, version, kind)
	})
}
