package action

import (
	"fmt"
	"strings"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
	"github.com/helm-drift/helm-drift/internal/resourceset"
)

// pruneExclusions are the labels and annotations that keep kustomize-controller from deleting
// an object it no longer applies (the value compared without case).
// xref: kustomize-controller internal/controller/kustomization_controller.go deleteObjects;
// fluxcd/pkg/ssa utils/meta.go AnyInMetadata.
var pruneExclusions = map[string]string{
	"kustomize.toolkit.fluxcd.io/prune":     "disabled",
	"kustomize.toolkit.fluxcd.io/reconcile": "disabled",
	"kustomize.toolkit.fluxcd.io/ssa":       "ignore",
}

// excluded names the label or annotation of obj that keeps it from being pruned ("" when none).
func excluded(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		m, _ := meta[field].(map[string]any)
		for k, v := range pruneExclusions {
			if s, _ := m[k].(string); s != "" && strings.EqualFold(s, v) {
				return k + ": " + s
			}
		}
	}
	return ""
}

// kept says why the release of a HelmRelease the base applies and the head does not stays
// (helm-controller uninstalls a release only when its HelmRelease is deleted), or "" when
// kustomize-controller deletes the HelmRelease. It follows the Kustomizations that applied it
// (h.Via) in the head: the last one still applies but no longer holds it, and prunes it when
// its spec.prune is true, it is not suspended and its build succeeds; or one of them is no
// longer applied, its parent prunes it (as above), and its deletion deletes what it applied
// when its deletionPolicy says so (MirrorPrune, the default: its spec.prune; Delete,
// WaitForTermination: yes; Orphan: no; suspended: no), and so on down to the HelmRelease. An
// object labelled or annotated kustomize.toolkit.fluxcd.io/prune: disabled (or reconcile:
// disabled, ssa: ignore) is never pruned. A HelmRelease of a plain file, or whose cluster's
// root Kustomization is gone, is taken to be deleted. One a Flux Operator ResourceSet the head
// still applies made is deleted by the operator, unless marked fluxcd.controlplane.io/prune:
// disabled; one whose ResourceSet is gone goes with it, as above.
// xref: kustomize-controller internal/controller/kustomization_controller.go prune,
// finalizerShouldDeleteResources.
func kept(h *fluxtree.HelmRelease, base, head *fluxtree.Tree) string {
	meta, _ := h.Object["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	rsName, _ := labels[resourceset.OwnerName].(string)
	rsNamespace, _ := labels[resourceset.OwnerNamespace].(string)
	if rsName != "" && head.Applies(h.Context, resourceset.Group, resourceset.Kind, rsNamespace, rsName) {
		// The Flux Operator deletes what the ResourceSet, still applied, no longer makes.
		annotations, _ := meta["annotations"].(map[string]any)
		if v, _ := annotations[resourceset.PruneAnnotation].(string); strings.EqualFold(v, "disabled") {
			return fmt.Sprintf("the HelmRelease is marked %s: disabled: the Flux Operator leaves it in the cluster", resourceset.PruneAnnotation)
		}
		return ""
	}
	if len(h.Via) == 0 {
		return ""
	}
	get := func(t *fluxtree.Tree, id string) map[string]any {
		ns, name, _ := strings.Cut(id, "/")
		return t.Kustomization(h.Context, ns, name)
	}
	// prunes says why the head's Kustomization id does not prune what it no longer applies.
	prunes := func(id string) string {
		spec, _ := get(head, id)["spec"].(map[string]any)
		ns, name, _ := strings.Cut(id, "/")
		switch {
		case head.BuildFailed(h.Context, ns, name):
			return fmt.Sprintf("Kustomization %s cannot be built in the head: it applies and prunes nothing until it can", id)
		case spec["suspend"] == true:
			return fmt.Sprintf("Kustomization %s is suspended in the head: it prunes nothing", id)
		case spec["prune"] != true:
			return fmt.Sprintf("Kustomization %s does not prune (spec.prune is not true): what it no longer applies stays in the cluster", id)
		}
		return ""
	}
	missing := -1
	for i, id := range h.Via {
		if get(head, id) == nil {
			missing = i
			break
		}
	}
	switch {
	case missing == 0:
		return ""
	case missing < 0:
		// Its Kustomization still applies, without it.
		if why := prunes(h.Via[len(h.Via)-1]); why != "" {
			return why
		}
	default:
		id := h.Via[missing]
		if why := prunes(h.Via[missing-1]); why != "" {
			return fmt.Sprintf("the head no longer applies Kustomization %s, and %s", id, why)
		}
		// Each Kustomization from there down is deleted, and deletes what it applied as its
		// deletionPolicy says.
		for _, id := range h.Via[missing:] {
			k := get(base, id)
			if ex := excluded(k); ex != "" {
				return fmt.Sprintf("Kustomization %s is marked %s: it is not deleted, nor what it applied", id, ex)
			}
			spec, _ := k["spec"].(map[string]any)
			policy, _ := spec["deletionPolicy"].(string)
			switch {
			case spec["suspend"] == true:
				return fmt.Sprintf("Kustomization %s is deleted while suspended: what it applied stays in the cluster", id)
			case policy == "Orphan" || (policy == "" || policy == "MirrorPrune") && spec["prune"] != true:
				if policy == "" {
					policy = "MirrorPrune (the default; its spec.prune is not true)"
				}
				return fmt.Sprintf("Kustomization %s is deleted, and its deletionPolicy %s leaves what it applied in the cluster", id, policy)
			}
		}
	}
	if ex := excluded(h.Object); ex != "" {
		return fmt.Sprintf("the HelmRelease is marked %s: kustomize-controller leaves it in the cluster", ex)
	}
	return ""
}

// moveNote warns of a HelmRelease that moves from one Kustomization to another ("" when it
// does not, or nothing prunes it on the way): the Kustomization it leaves prunes it (or
// deletes it as it is deleted itself) if it reconciles before the one it joins has applied it
// (kustomize-controller prunes the objects its labels still say it owns), and helm-controller
// then uninstalls its release before it is installed again.
// xref: kustomize-controller internal/controller/kustomization_controller.go deleteObjects
// (Inclusions: the owner labels).
func moveNote(p treePair, base, head *fluxtree.Tree) string {
	if p.base == nil || p.head == nil || len(p.base.Via) == 0 || len(p.head.Via) == 0 {
		return ""
	}
	from, to := p.base.Via[len(p.base.Via)-1], p.head.Via[len(p.head.Via)-1]
	if from == to {
		return ""
	}
	// What happens to it as one that Kustomization no longer applies (pruned, or deleted with
	// that Kustomization) is what happens if that Kustomization goes first.
	if kept(p.base, base, head) != "" {
		return ""
	}
	where := p.head.Namespace + "/" + p.head.Name
	if p.head.Context != "" {
		where += " (" + p.head.Context + ")"
	}
	return fmt.Sprintf("HelmRelease %s moves from Kustomization %s to %s: if %s reconciles first, it prunes the HelmRelease and helm-controller uninstalls its release before %s installs it again; mark it kustomize.toolkit.fluxcd.io/prune: disabled for the move", where, from, to, from, to)
}
