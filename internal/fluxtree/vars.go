package fluxtree

import (
	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/kustomize"
	"sigs.k8s.io/kustomize/api/resource"
)

// substituteKey is the label or annotation by which an object opts out of the substitution.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// referencedVars are the variables the post-build substitution looks up in r's text
// (envsubst's own parse: escapes, defaults), for a HelmRelease and the ConfigMaps and Secrets
// its values may come from; nil for other kinds and when r is not substituted.
func referencedVars(spec map[string]any, r *resource.Resource) map[string]bool {
	switch r.GetKind() {
	case "HelmRelease", "ConfigMap", "Secret":
	default:
		return nil
	}
	if _, ok := spec["postBuild"]; !ok ||
		r.GetLabels()[substituteKey] == kustomize.DisabledValue || r.GetAnnotations()[substituteKey] == kustomize.DisabledValue {
		return nil
	}
	text, err := r.AsYAML()
	if err != nil {
		return nil
	}
	refs := map[string]bool{}
	_, _ = envsubst.Eval(string(text), func(name string) (string, bool) {
		refs[name] = true
		return "", true
	})
	return refs
}

// varsOf are the variables of vars (a Kustomization's) that refs names.
func varsOf(refs map[string]bool, vars map[string]Var) map[string]Var {
	out := map[string]Var{}
	for n := range refs {
		if v, ok := vars[n]; ok {
			out[n] = v
		}
	}
	return out
}

// refer records the variables the object key refers to.
func (p *pool) refer(key string, vars map[string]Var) {
	if len(vars) == 0 {
		return
	}
	if p.refs == nil {
		p.refs = map[string]map[string]Var{}
	}
	p.refs[key] = vars
}

// valuesFromVars adds to h.Vars the variables its valuesFrom ConfigMaps and Secrets refer to:
// a variable moved in one of those changes the HelmRelease's values too.
func (p *pool) valuesFromVars(h *HelmRelease) {
	spec, _ := h.Object["spec"].(map[string]any)
	refs, _ := spec["valuesFrom"].([]any)
	for _, r := range refs {
		rm, _ := r.(map[string]any)
		for n, v := range p.refs[objectKey("", str(rm, "kind"), h.Namespace, str(rm, "name"))] {
			if h.Vars == nil {
				h.Vars = map[string]Var{}
			}
			h.Vars[n] = v
		}
	}
}
