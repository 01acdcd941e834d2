package fluxtree

import (
	"fmt"
	"strings"
)

// ServedVersions are the API versions (by group) the Flux controllers helm-drift renders and
// builds as serve, for the groups a preview reads (their CRDs: helm-controller v1.6.4,
// kustomize-controller v1.9.6, source-controller v1.9.6; e2e TestFluxServedVersions checks
// them against the CRDs installed from those modules).
var ServedVersions = map[string]string{helmGroup: "v2", kustomizeGroup: "v1", sourceGroup: "v1"}

// served notes an object of a Flux group in a version those controllers no longer serve
// (helm.toolkit.fluxcd.io/v2beta1, say): a cluster running them cannot have it applied, and the
// Kustomization that applies it fails there. from says what applies it.
func (b *builder) served(obj map[string]any, group, kind, ns, name, from string) {
	want, ok := ServedVersions[group]
	if !ok {
		return
	}
	if v := strings.TrimPrefix(str(obj, "apiVersion"), group+"/"); v != want {
		id := name
		if ns != "" {
			id = ns + "/" + name
		}
		b.tree.Unserved = append(b.tree.Unserved, fmt.Sprintf("%s %s (%s) is %s/%s, which Flux's current controllers no longer serve: applying it fails there; move it to %s/%s", kind, id, from, group, v, group, want))
	}
}
