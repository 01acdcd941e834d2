package manifest

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Scope says whether a kind is namespaced.
type Scope int

// The scopes a kind can have, and Unknown when nobody could say.
const (
	Unknown Scope = iota
	Namespaced
	ClusterScoped
)

// ScopeResolver answers the scope of kinds the built-in data does not know (CRDs), e.g. from
// the cluster's discovery API.
type ScopeResolver interface {
	// Scope returns the scope of group/kind; Unknown when the kind is not served.
	Scope(group, version, kind string) (Scope, error)
}

// legacyGroups maps kinds that moved between API groups to their current group, so that
// extensions/v1beta1 and apps/v1 Deployments of one name are one identity.
var legacyGroups = map[[2]string]string{
	{"extensions", "Deployment"}:        "apps",
	{"extensions", "DaemonSet"}:         "apps",
	{"extensions", "ReplicaSet"}:        "apps",
	{"extensions", "Ingress"}:           "networking.k8s.io",
	{"extensions", "NetworkPolicy"}:     "networking.k8s.io",
	{"extensions", "PodSecurityPolicy"}: "policy",
}

// CanonicalGroup returns the group an object of group/kind lives in today.
func CanonicalGroup(group, kind string) string {
	if g, ok := legacyGroups[[2]string{group, kind}]; ok {
		return g
	}
	return group
}

// fluxGroups are the API groups of Flux's own kinds, all namespaced: this tool's stock in trade
// needs no cluster to be known.
var fluxGroups = map[string]bool{
	"helm.toolkit.fluxcd.io":         true,
	"source.toolkit.fluxcd.io":       true,
	"kustomize.toolkit.fluxcd.io":    true,
	"notification.toolkit.fluxcd.io": true,
	"image.toolkit.fluxcd.io":        true,
}

// builtinScope looks a kind up in kyaml's OpenAPI data, trying the versions a group has had.
func builtinScope(apiVersion, kind string) Scope {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	if fluxGroups[group] {
		return Namespaced
	}
	candidates := []string{apiVersion}
	g := CanonicalGroup(group, kind)
	for _, v := range []string{"v1", "v2", "v1beta1", "v1beta2", "v1alpha1"} {
		if g == "" {
			candidates = append(candidates, v)
		} else {
			candidates = append(candidates, g+"/"+v)
		}
	}
	for _, av := range candidates {
		if namespaced, found := openapi.IsNamespaceScoped(yaml.TypeMeta{APIVersion: av, Kind: kind}); found {
			if namespaced {
				return Namespaced
			}
			return ClusterScoped
		}
	}
	return Unknown
}

// BuiltinScope is the scope of a kind as known without a cluster (Kubernetes' own kinds from
// kyaml's OpenAPI data, Flux's kinds); Unknown for any other.
func BuiltinScope(apiVersion, kind string) Scope { return builtinScope(apiVersion, kind) }
