package live

import (
	"errors"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Namespacer answers whether a kind is namespaced; *Client is one.
type Namespacer interface {
	Namespaced(group, version, kind string) (bool, error)
}

// Scopes lets a manifest.Identifier ask the cluster the scope of the kinds it does not know
// (custom resources); a kind the cluster does not serve is of unknown scope.
func Scopes(n Namespacer) manifest.ScopeResolver { return scopes{n} }

type scopes struct{ n Namespacer }

func (s scopes) Scope(group, version, kind string) (manifest.Scope, error) {
	namespaced, err := s.n.Namespaced(group, version, kind)
	switch {
	case errors.Is(err, ErrNotServed):
		return manifest.Unknown, nil
	case err != nil:
		return manifest.Unknown, err
	case namespaced:
		return manifest.Namespaced, nil
	}
	return manifest.ClusterScoped, nil
}
