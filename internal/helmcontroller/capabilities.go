package helmcontroller

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/client-go/kubernetes/scheme"
)

// builtinKinds are "group/version/Kind" for the kinds of Kubernetes' built-in API versions the
// Helm SDK offers a render with no cluster (common.DefaultVersionSet, "group/version" only),
// sorted. A cluster's discovery lists both forms, and helm-controller's render sees both:
// a chart that asks .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" gets true
// there, and would get false from the SDK's offline set (rendering, say, the policy/v1beta1
// PodDisruptionBudget the cluster no longer serves). The kinds are client-go's scheme's, but
// for lists and the request options every group version registers: a kind no chart asks for
// does no harm.
// xref: helm.sh/helm/v4 pkg/action/action.go GetVersionSet (discovery: both forms);
// pkg/chart/common/capabilities.go allKnownVersions.
var builtinKinds = sync.OnceValue(func() []string {
	versions := map[string]bool{}
	for _, v := range common.DefaultVersionSet {
		versions[v] = true
	}
	var out []string
	for gvk := range scheme.Scheme.AllKnownTypes() {
		gv := gvk.GroupVersion().String()
		if !versions[gv] || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") ||
			gvk.Kind == "WatchEvent" || gvk.Kind == "Status" || gvk.Kind == "APIVersions" || gvk.Kind == "APIGroup" || gvk.Kind == "APIResourceList" {
			continue
		}
		out = append(out, gv+"/"+gvk.Kind)
	}
	slices.Sort(out)
	return slices.Compact(out)
})

// offlineAPIVersions are the API versions of a render with no cluster beyond the SDK's default
// set: the built-in kinds (builtinKinds), then those given.
func offlineAPIVersions(given []string) []string {
	return append(slices.Clone(builtinKinds()), given...)
}

// asked finds the API versions a template asks .Capabilities.APIVersions.Has for by a literal.
var asked = regexp.MustCompile(`\.Capabilities\.APIVersions\.Has\s+"([^"]+)"`)

// UnservedAsks are the API versions ch's templates (its dependencies' too) ask
// .Capabilities.APIVersions.Has for by a literal that a render with no cluster, given the API
// versions given, does not offer (neither the SDK's default set nor the built-in kinds), sorted:
// the render answers false where a cluster that serves them answers true.
func UnservedAsks(ch *chartv2.Chart, given []string) []string {
	offered := map[string]bool{}
	for _, v := range common.DefaultVersionSet {
		offered[v] = true
	}
	for _, v := range offlineAPIVersions(given) {
		offered[v] = true
	}
	set := map[string]bool{}
	var walk func(c *chartv2.Chart)
	walk = func(c *chartv2.Chart) {
		for _, f := range c.Templates {
			for _, m := range asked.FindAllSubmatch(f.Data, -1) {
				if v := string(m[1]); !offered[v] {
					set[v] = true
				}
			}
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	return slices.Sorted(maps.Keys(set))
}
