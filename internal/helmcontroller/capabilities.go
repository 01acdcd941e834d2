package helmcontroller

import (
	"maps"
	"regexp"
	"slices"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-drift/helm-drift/internal/kubeapis"
)

// asked finds the API versions a template asks .Capabilities.APIVersions.Has for by a literal.
var asked = regexp.MustCompile(`\.Capabilities\.APIVersions\.Has\s+"([^"]+)"`)

// UnservedAsks are the API versions ch's templates (its dependencies' too) ask
// .Capabilities.APIVersions.Has for by a literal that a render with no cluster at Kubernetes
// release kubeVersion, given the API versions given, does not offer, sorted: the render
// answers false where a cluster that serves them answers true. Versions of Kubernetes' own
// groups are not among them: the render answers for those as the release's API server does.
func UnservedAsks(ch *chartv2.Chart, kubeVersion string, given []string) []string {
	offered := map[string]bool{}
	all, err := kubeapis.Offered(kubeVersion, given)
	if err != nil {
		return nil // the render itself refused the version
	}
	for _, v := range all {
		offered[v] = true
	}
	set := map[string]bool{}
	var walk func(c *chartv2.Chart)
	walk = func(c *chartv2.Chart) {
		for _, f := range c.Templates {
			for _, m := range asked.FindAllSubmatch(f.Data, -1) {
				if v := string(m[1]); !offered[v] && !kubeapis.Builtin(v) {
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
