package diff

import (
	"bytes"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/managedfields"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

// predictor says what a helm upgrade to the desired manifest would do to each divergence of
// one object, the way Helm writes the object:
//
//   - client-side (Helm 3): built-in kinds get a three-way strategic merge patch of the last
//     manifest, the desired one and the live object, which sets every field the chart states
//     and removes what the last manifest had and the desired one drops; custom resources get a
//     two-way JSON merge patch of the last and the desired manifest only, which touches only
//     the fields the chart changes (xref: Helm v3 pkg/kube/client.go createPatch).
//   - server-side (Helm 4): an apply as Helm's field manager without --force-conflicts: a
//     field another manager owns with another value conflicts and fails the upgrade; a field
//     the chart drops is removed only when Helm's manager alone owns it.
type predictor struct {
	builtIn    bool
	serverSide bool
	// forceConflicts: the upgrade applies with --force-conflicts (it takes fields over);
	// forceReplace: with --force (Helm 3) or --force-replace (Helm 4), it replaces objects.
	forceConflicts, forceReplace bool
	// helm is Helm's field manager (found by the release annotation it owns).
	helm     managedfields.Manager
	managers []managedfields.Manager
	live     map[string]any
	// dropped are the paths the last manifest has and the desired one does not; changed those
	// the desired manifest sets to another value than the last one (or newly).
	dropped, changed map[string]bool
	hasPrevious      bool
	// prev is the last release's object, decoded when its document differs from the desired
	// one (nil otherwise: the two are the same).
	prev map[string]any
	// stringData are the Secret keys the chart writes as stringData: an apply writes them over
	// data whoever owns data's key, so they never conflict.
	stringData map[string]bool
}

func (m *measure) predictor(tm kyaml.TypeMeta, t *target, desired map[string]any) *predictor {
	p := &predictor{builtIn: normalize.BuiltIn(tm), live: t.live, dropped: map[string]bool{}, changed: map[string]bool{}}
	p.managers = managedfields.Fields(t.live)
	if h, ok := managedfields.Helm(t.live, p.managers); ok {
		p.helm = h
		p.serverSide = h.Operation == "Apply"
	}
	switch m.in.Apply {
	case ApplyServerSide:
		p.serverSide = true
	case ApplyClientSide:
		p.serverSide = false
	}
	p.forceConflicts, p.forceReplace = m.in.ForceConflicts, m.in.ForceReplace
	if sd, ok := desired["stringData"].(map[string]any); ok && t.ob.Kind == "Secret" {
		p.stringData = map[string]bool{}
		for k := range sd {
			p.stringData["/data/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")] = true
		}
	}
	if t.prev == nil {
		return p
	}
	p.hasPrevious = true
	if bytes.Equal(t.prev.Doc.YAML(), t.ob.Doc.YAML()) && t.prev.Item == t.ob.Item {
		return p // the same document: the upgrade changes and drops nothing here
	}
	prev, err := t.prev.Decode()
	if err != nil {
		return p
	}
	p.prev = prev
	ns := t.id.Namespace
	res := compare.Compare(tm, normalize.Object(desired, ns), normalize.Object(withNamespace(prev, ns), ns))
	for _, d := range res.Divergences {
		if d.Class == compare.ClusterOnly {
			p.dropped[d.Path] = true
		} else {
			p.changed[d.Path] = true
		}
	}
	return p
}

// predict fills in row's upgrade prediction.
func (p *predictor) predict(row *Row) {
	var others []string
	helmOwns := false
	if row.Class != compare.ChartOnly {
		for _, o := range managedfields.Owners(p.live, p.managers, row.Pointer) {
			if o.Name == p.helm.Name && o.Operation == p.helm.Operation {
				helmOwns = true
			} else {
				if !slices.Contains(others, o.Name) {
					others = append(others, o.Name)
				}
				if !o.Time.IsZero() && (row.MovedAt == nil || o.Time.After(*row.MovedAt)) {
					at := o.Time.UTC()
					row.MovedAt = &at
				}
			}
		}
		row.Managers = others
		if p.stringData[row.Pointer] {
			others = nil
		}
	}
	if p.forceReplace && row.Class != compare.Shadows {
		row.Resolved, row.Why = true, "replaced: the upgrade replaces the object with the chart's (--force)"
		return
	}
	changedByChart := !p.hasPrevious || p.changed[row.Path] || underAny(row.Path, p.changed) || aboveAny(row.Path, p.changed)
	switch row.Class {
	case compare.ChartOnly:
		switch {
		case p.serverSide || p.builtIn || changedByChart:
			row.Resolved, row.Why = true, "sets it"
		default:
			row.Why = "not set: Helm 3 patches a custom resource with a two-way merge of the last and the new manifest, and this field is in both"
		}
	case compare.Differs:
		switch {
		case p.serverSide && len(others) > 0 && p.forceConflicts:
			row.Resolved, row.Why = true, "resets it to the chart's value, taking it from "+strings.Join(others, ", ")+" (--force-conflicts)"
		case p.serverSide && len(others) > 0:
			row.Why = "conflict with " + strings.Join(others, ", ") + ": helm upgrade fails unless --force-conflicts"
		case p.serverSide || p.builtIn || changedByChart:
			row.Resolved, row.Why = true, "resets it to the chart's value"
		default:
			row.Why = "kept: Helm 3 patches a custom resource with a two-way merge of the last and the new manifest, and the chart does not change this field"
		}
	case compare.ClusterOnly:
		dropped := p.dropped[row.Path] || underAny(row.Path, p.dropped) || aboveAny(row.Path, p.dropped)
		switch {
		case !dropped:
			row.Why = "kept: the chart does not state it"
			if len(others) > 0 {
				row.Why += " (set by " + strings.Join(others, ", ") + ")"
			}
		case p.serverSide && !helmOwns:
			row.Why = "kept: Helm's field manager does not own it"
		case p.serverSide && len(others) > 0:
			row.Why = "kept: also owned by " + strings.Join(others, ", ")
		default:
			row.PendingDeletion, row.Resolved, row.Why = true, true, "removes it (in the last release, not in the new render)"
		}
	case compare.Shadows:
		row.Why = "kept: an upgrade does not change which source wins"
	}
}

// moved says who moved the field at path away from what the stored release applied: an object
// new to the release is the chart's doing; one the render does not change, the cluster's; else
// the chart's where the render changes the field, and also the cluster's where the live object
// left what was applied (left).
func (p *predictor) moved(path string, left map[string]bool) Moved {
	if !p.hasPrevious {
		return MovedChart
	}
	if p.prev == nil {
		return MovedCluster
	}
	near := func(paths map[string]bool) bool { return paths[path] || underAny(path, paths) || aboveAny(path, paths) }
	switch {
	case !near(p.changed) && !near(p.dropped):
		return MovedCluster
	case near(left):
		return MovedBoth
	}
	return MovedChart
}

// underAny reports whether path lies under one of paths (a map or list the other side lacks
// as a whole is recorded leaf by leaf, but a leaf may be compared against its parent).
func underAny(path string, paths map[string]bool) bool {
	for p := range paths {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// aboveAny reports whether one of paths lies under path (a row folded into one entry, whose
// leaves the last-vs-new comparison recorded one by one).
func aboveAny(path string, paths map[string]bool) bool {
	for p := range paths {
		if strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}
