package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

type listKey struct{ group, version, kind, namespace string }

type listing struct {
	byName map[string]map[string]any
	// names: the objects to read one by one (a kind whose LIST would read far more than the
	// release holds); nil for a LIST.
	names []string
	// notServed: the cluster does not serve the kind (its CRD is not installed).
	notServed bool
	// err: the read failed; the kind's objects cannot be measured.
	err error
}

// readByName are the kinds read with a GET per object rather than one LIST: a cluster's
// CustomResourceDefinitions are its largest objects, often hundreds of them, of which a chart
// brings a few (a LIST of them read every CRD of the cluster, each schema in full).
func readByName(k listKey) bool {
	return k.group == "apiextensions.k8s.io" && k.kind == "CustomResourceDefinition"
}

func keyOf(o manifest.Object, id manifest.Identity) listKey {
	_, version := splitAPIVersion(o.APIVersion)
	return listKey{id.Group, version, id.Kind, id.Namespace}
}

// listingFor adds the read of o to m.lists.
func (m *measure) listingFor(o manifest.Object, id manifest.Identity) {
	k := keyOf(o, id)
	l := m.lists[k]
	if l == nil {
		l = &listing{}
		m.lists[k] = l
	}
	if readByName(k) {
		l.names = append(l.names, o.Name)
	}
}

// listAll makes the reads of m.lists, at most Workers at a time: one LIST per kind and
// namespace, or a GET per object of a kind read by name.
func (m *measure) listAll(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.in.Workers)
	for k, l := range m.lists {
		if readByName(k) {
			l.byName = make(map[string]map[string]any, len(l.names))
			var mu sync.Mutex
			for _, name := range l.names {
				g.Go(func() error {
					obj, err := m.cl.Get(gctx, k.group, k.version, k.kind, k.namespace, name)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case apierrors.IsNotFound(err):
					case err != nil:
						if l.err == nil {
							l.err = m.explain(err, "get", k.group, k.version, k.kind, k.namespace)
						}
					default:
						l.byName[name] = obj
					}
					return nil
				})
			}
			continue
		}
		g.Go(func() error {
			items, err := m.cl.ListObjects(gctx, k.group, k.version, k.kind, k.namespace)
			l.notServed = errors.Is(err, live.ErrNotServed)
			if err != nil && !l.notServed {
				l.err = m.explain(err, "list", k.group, k.version, k.kind, k.namespace)
				return nil // the kind's objects carry it
			}
			l.byName = make(map[string]map[string]any, len(items))
			for _, it := range items {
				if md, ok := it["metadata"].(map[string]any); ok {
					n, _ := md["name"].(string)
					l.byName[n] = it
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// explain turns a 403 into the permission that is missing.
func (m *measure) explain(err error, verb, group, version, kind, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	res, rerr := m.cl.Resource(group, version, kind)
	if rerr != nil {
		res = strings.ToLower(kind)
	}
	where := "cluster-wide"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	return fmt.Errorf("forbidden: needs %s on %s %s (grant it, or leave the kind out of the release): %w", verb, res, where, err)
}
