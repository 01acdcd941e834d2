package helmcontroller

import (
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
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
