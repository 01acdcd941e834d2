package manifest

import (
	"fmt"
	"strings"
)

// Identifier gives the objects of one stream their identities: the scope of each kind from
// the CRDs in the stream, then the built-in data, then a ScopeResolver (the cluster); a kind
// none of them knows is taken as namespaced, with a note.
type Identifier struct {
	namespace string
	resolver  ScopeResolver
	crds      map[[2]string]Scope // group/kind → scope, from CRDs in the stream
	scopes    map[[2]string]Scope // apiVersion/kind → scope, as decided once
	assumed   map[string]bool     // kinds assumed namespaced
	// Notes are things the user should know about the identities: the kinds assumed namespaced.
	Notes []string
}

// NewIdentifier returns the identifier for objs (the objects of one stream) in the release
// namespace namespace; resolver (may be nil) answers kinds neither a CRD in the stream nor the
// built-in data knows.
func NewIdentifier(objs []Object, namespace string, resolver ScopeResolver) *Identifier {
	id := &Identifier{namespace: namespace, resolver: resolver, crds: map[[2]string]Scope{}, scopes: map[[2]string]Scope{}, assumed: map[string]bool{}}
	for _, o := range objs {
		if o.Kind != "CustomResourceDefinition" || o.Group() != "apiextensions.k8s.io" {
			continue
		}
		crd, err := crdOf(o)
		if err != nil {
			continue
		}
		scope := Namespaced
		if crd.scope == "Cluster" {
			scope = ClusterScoped
		}
		id.crds[[2]string{crd.group, crd.kind}] = scope
	}
	return id
}

// Identity returns the object's identity: group made canonical, namespace defaulted to the
// release namespace for namespaced kinds and dropped for cluster-scoped ones.
func (c *Identifier) Identity(o Object) Identity {
	group := CanonicalGroup(o.Group(), o.Kind)
	id := Identity{Group: group, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace}
	switch c.scope(o) {
	case ClusterScoped:
		id.Namespace = ""
	default:
		if id.Namespace == "" {
			id.Namespace = c.namespace
		}
	}
	return id
}

func (c *Identifier) scope(o Object) Scope {
	key := [2]string{o.APIVersion, o.Kind}
	if s, ok := c.scopes[key]; ok {
		return s
	}
	s := c.resolveScope(o)
	c.scopes[key] = s
	return s
}

func (c *Identifier) resolveScope(o Object) Scope {
	group := CanonicalGroup(o.Group(), o.Kind)
	if s, ok := c.crds[[2]string{group, o.Kind}]; ok {
		return s
	}
	if s := builtinScope(o.APIVersion, o.Kind); s != Unknown {
		return s
	}
	if c.resolver != nil {
		_, version, _ := strings.Cut(o.APIVersion, "/")
		if s, err := c.resolver.Scope(group, version, o.Kind); err == nil && s != Unknown {
			return s
		}
	}
	if kg := o.Kind + "." + group; !c.assumed[kg] {
		c.assumed[kg] = true
		c.Notes = append(c.Notes, fmt.Sprintf("kind %s (%s) is not a built-in kind and no CRD for it is in the stream or the cluster: treated as namespaced", o.Kind, o.APIVersion))
	}
	return Namespaced
}
