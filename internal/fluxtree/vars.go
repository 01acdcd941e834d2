package fluxtree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/kustomize"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// vars are a Kustomization's substitution variables: each substituteFrom object's data (in
// order; a Secret's decoded), then spec.postBuild.substitute over them, as kustomize-controller
// loads them; where each came from; and, for those whose value this run cannot read (a
// SOPS-encrypted Secret without its key), a digest of the value as written. m is k's own
// build: a substituteFrom object no other Kustomization of the context applies may be one k
// applies itself (it then exists in the cluster when k is reconciled, from k's last apply).
func (b *builder) vars(ctx context.Context, k ksRef, p *pool, m *made) (vars, origins, digests map[string]string, err error) {
	spec, _ := k.obj["spec"].(map[string]any)
	pb, _ := spec["postBuild"].(map[string]any)
	if pb == nil {
		return nil, nil, nil, nil
	}
	vars, origins, digests = map[string]string{}, map[string]string{}, map[string]string{}
	from, _ := pb["substituteFrom"].([]any)
	for _, f := range from {
		ref, _ := f.(map[string]any)
		kind, name := str(ref, "kind"), str(ref, "name")
		optional, _ := ref["optional"].(bool)
		id := kind + " " + k.namespace + "/" + name
		o, ok := p.objects[objectKey("", kind, k.namespace, name)]
		sealed := p.encrypted[kind+"/"+k.namespace+"/"+name]
		if sealed {
			o, ok = p.sealed[kind+"/"+k.namespace+"/"+name], true
		} else if !ok {
			if o, sealed, ok = m.own(k, kind, name); ok && !sealed {
				o, _ = b.applied(p.context, k.id(), o)
				ok = o != nil
			}
		}
		if !ok && k.outside && b.opts.Outside != nil {
			// Not in the tree, the context's other Kustomizations built: kustomize-controller
			// reads it from the cluster, and so does this.
			switch co, err := b.opts.Outside.Get(ctx, "", "v1", kind, k.namespace, name); {
			case err == nil:
				o, ok, id = co, true, id+" (in the cluster)"
			case !apierrors.IsNotFound(err):
				return nil, nil, nil, fmt.Errorf("postBuild.substituteFrom %s, not in the tree, read from the cluster: %w", id, err)
			}
		}
		if !ok {
			if len(b.opts.Vars) > 0 {
				for n, v := range b.opts.Vars {
					vars[n], origins[n] = v, "--substitute"
				}
				continue
			}
			if optional {
				continue
			}
			return nil, nil, nil, &missingVars{ref: id}
		}
		if sealed {
			if err := b.placeholders(k, o, id, vars, origins, digests); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		for n, v := range stringData(o, kind == "Secret") {
			vars[n], origins[n] = strings.ReplaceAll(v, "\n", ""), id
			if kind == "Secret" {
				p.vars[n] = vars[n]
			}
		}
	}
	sub, _ := pb["substitute"].(map[string]any)
	for n, v := range sub {
		s, _ := v.(string)
		vars[n], origins[n] = strings.ReplaceAll(s, "\n", ""), "inline"
	}
	return vars, origins, digests, nil
}

// own finds, among the objects of the build m of Kustomization k, the ConfigMap or Secret
// kind/name in k's namespace, and says whether it stays encrypted in this run.
func (m *made) own(k ksRef, kind, name string) (map[string]any, bool, bool) {
	for i := range m.size() {
		o, err := m.object(i)
		if err != nil {
			return nil, false, false
		}
		meta, _ := o["metadata"].(map[string]any)
		if str(o, "kind") != kind || str(meta, "name") != name || groupOf(str(o, "apiVersion")) != "" {
			continue
		}
		if ns := str(meta, "namespace"); ns != k.namespace && (ns != "" || k.namespace != "default") {
			continue
		}
		sealed := isSOPS(o) || !m.decrypted[i] && sopsDecryption(k) && encryptedValues(o)
		return o, sealed, true
	}
	return nil, false, false
}

// placeholders sets the variables of o, a substituteFrom Secret or ConfigMap that stays
// SOPS-encrypted in this run (no key given), to themselves: each key of its data (sops
// encrypts values, never keys) is substituted by "${KEY}", so the text reads as written where
// it is used, and a digest of its ciphertext tells that it changed. It refuses an object whose
// keys it cannot read.
func (b *builder) placeholders(k ksRef, o map[string]any, id string, vars, origins, digests map[string]string) error {
	var names []string
	for _, field := range []string{"data", "stringData"} {
		data, _ := o[field].(map[string]any)
		for n, v := range data {
			if n == "sops_mac" || n == "sops" {
				continue
			}
			s, _ := v.(string)
			sum := sha256.Sum256([]byte(s))
			vars[n], origins[n], digests[n] = "${"+n+"}", "SOPS-encrypted "+id+", not decrypted", hex.EncodeToString(sum[:8])
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("postBuild.substituteFrom %s is SOPS-encrypted and no variable name can be read from it: diff tree decrypts it only with its key (--sops-age-key-file or --sops-pgp-key-file) and a Kustomization whose spec.decryption.provider is sops", id)
	}
	sort.Strings(names)
	note := fmt.Sprintf("%s (postBuild.substituteFrom of Kustomization %s): SOPS-encrypted, not decrypted; its variables (%s) are left as written, e.g. ${%s}: pass its key with --sops-age-key-file or --sops-pgp-key-file to substitute them",
		id, k.id(), limitNames(names, 6), names[0])
	if !slices.Contains(b.tree.Unsubstituted, note) { // each Kustomization that reads it
		b.tree.Unsubstituted = append(b.tree.Unsubstituted, note)
	}
	return nil
}

// limitNames joins up to n names, then says how many more there are.
func limitNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}
