package fluxtree

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The markers kustomize-controller reads on the objects it applies (a label or an annotation;
// the value compared without case) to leave one as the cluster holds it.
// xref: kustomize-controller internal/controller/kustomization_controller.go apply
// (ExclusionSelector, IfNotPresentSelector); fluxcd/pkg/ssa manager_apply.go shouldSkipApply,
// utils/meta.go AnyInMetadata.
const (
	reconcileMarker = "kustomize.toolkit.fluxcd.io/reconcile" // disabled: never applied
	ssaMarker       = "kustomize.toolkit.fluxcd.io/ssa"       // Ignore: never applied; IfNotPresent: created, never updated
)

// marker is "key: value" when o is labelled or annotated key with one of values, else "".
func marker(o map[string]any, key string, values ...string) string {
	meta, _ := o["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		m, _ := meta[field].(map[string]any)
		s, _ := m[key].(string)
		for _, v := range values {
			if s != "" && strings.EqualFold(s, v) {
				return key + ": " + s
			}
		}
	}
	return ""
}

// excluded is the marker that keeps kustomize-controller from ever applying o ("" if none).
func excluded(o map[string]any) string {
	if m := marker(o, reconcileMarker, "disabled"); m != "" {
		return m
	}
	return marker(o, ssaMarker, "Ignore")
}

// marked says whether o carries a marker that can keep it from being applied.
func marked(o map[string]any) bool {
	return excluded(o) != "" || marker(o, ssaMarker, "IfNotPresent") != ""
}

// skipped says why kustomize-controller does not apply o over existing, the copy the cluster
// holds (nil: none), or "" when it applies it.
func skipped(o, existing map[string]any) string {
	switch {
	case excluded(o) != "":
		return "it is marked " + excluded(o) + ": kustomize-controller never applies it"
	case existing != nil && excluded(existing) != "":
		return "the cluster's copy is marked " + excluded(existing) + ": kustomize-controller never applies it (the marker must be taken off in the cluster)"
	case existing != nil && marker(o, ssaMarker, "IfNotPresent") != "":
		return "it is marked " + marker(o, ssaMarker, "IfNotPresent") + " and the cluster holds it: kustomize-controller does not update it"
	}
	return ""
}

// applied is o, which Kustomization k of context applies, as the cluster holds it once
// kustomize-controller has applied it (nil: it holds none), given what the cluster held
// before (Options.Cluster, the tree it was last reconciled from): o itself, unless a marker
// keeps kustomize-controller from applying it (skipped); then the cluster's copy (and true),
// with a note when o says otherwise. Without Options.Cluster, o is taken to be applied, and
// Tree.Marked says a marker was seen.
func (b *builder) applied(context, k string, o map[string]any) (map[string]any, bool) {
	cluster := b.opts.Cluster
	var existing map[string]any
	if cluster != nil {
		meta, _ := o["metadata"].(map[string]any)
		existing = cluster.contexts[context][objectKey(groupOf(str(o, "apiVersion")), str(o, "kind"), str(meta, "namespace"), str(meta, "name"))]
	}
	if !marked(o) && (existing == nil || !marked(existing)) {
		return o, false
	}
	b.tree.Marked = true
	why := skipped(o, existing)
	if cluster == nil || why == "" {
		return o, false
	}
	if existing == nil || !reflect.DeepEqual(o, existing) {
		meta, _ := o["metadata"].(map[string]any)
		what := "its changes are not applied"
		if existing == nil {
			what = "it is not created"
		}
		note := fmt.Sprintf("%s %s/%s (Kustomization %s): %s: %s", str(o, "kind"), str(meta, "namespace"), str(meta, "name"), k, why, what)
		if !slices.Contains(b.tree.NotApplied, note) { // read as a substituteFrom object, then applied
			b.tree.NotApplied = append(b.tree.NotApplied, note)
		}
	}
	return existing, true
}
