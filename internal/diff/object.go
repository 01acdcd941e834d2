package diff

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/memo"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

// measure holds what one Run shares between objects.
type measure struct {
	in    Input
	cl    Cluster
	ids   *manifest.Identifier
	rules []flux.IgnoreRule
	lists map[listKey]*listing
	// crdServes are the API versions ("group/version/Kind") of the crds/ CRDs the release
	// creates before its objects (Input.CRDPolicy).
	crdServes map[string]bool

	sources    memo.Map[string, source]
	crdSchemas memo.Map[string, readySchema]

	mu     sync.Mutex
	dryRun map[string]string // resource → why the dry-run is not used for it ("" = use it)
	// probeDenied are the resources whose dry-run write the user may not make.
	probeDenied map[string]bool
}

// object measures one desired object.
func (m *measure) object(ctx context.Context, t *target) (Object, error) {
	o := Object{Object: t.id.String(), Rows: []Row{}, Normalize: string(Offline)}
	if err := m.lists[keyOf(t.ob, t.id)].err; err != nil {
		return o, err
	}
	if t.live == nil {
		o.Missing, o.Compared = true, 1
		o.Normalize = "-"
		row := Row{Class: compare.ChartOnly, Path: "(whole object)", Resolved: true, Why: "created", Moved: MovedChart}
		if t.prev != nil {
			row.Moved = MovedCluster // applied, then deleted
		}
		row.RenderDependent = row.Moved == MovedChart && m.in.SameInputs
		notServed := m.lists[keyOf(t.ob, t.id)].notServed
		if notServed && m.crdServes[t.ob.APIVersion+"/"+t.ob.Kind] {
			row.Why = "created, after the CRD the chart's crds/ creates"
		} else if notServed {
			row.Resolved, row.Why = false, "fails: the cluster does not serve "+t.ob.Kind+" "+t.ob.APIVersion+" (install its CRD first)"
		}
		o.Rows = append(o.Rows, row)
		if desired, err := t.ob.Decode(); err == nil && !notServed {
			if t.id.Namespace != "" {
				desired = withNamespace(desired, t.id.Namespace)
			}
			if m.in.Views {
				o.View = compare.OneSide(normalize.Object(desired, t.id.Namespace), nil)
			}
			m.probe(ctx, t, &o, desired)
		}
		return o, nil
	}
	desired, err := m.desired(t)
	if err != nil {
		return o, err
	}
	tm := kyaml.TypeMeta{APIVersion: t.ob.APIVersion, Kind: t.ob.Kind}
	chartSide, mode, err := m.normalize(ctx, t, tm, desired)
	if err != nil {
		return o, err
	}
	o.Normalize = mode
	chart := normalize.Object(chartSide, t.id.Namespace)
	cluster := normalize.Object(t.live, "")
	res := compareSides(tm, t.id, chart, cluster, m.rules, m.in.Views, &o)

	p := m.predictor(tm, t, desired)
	unstable := unstablePaths(tm, t, desired)
	left := m.leftApplied(ctx, t, tm, p, cluster)
	for _, dv := range res.Divergences {
		row := Row{Class: dv.Class, Path: dv.Path, Pointer: dv.Pointer, Chart: dv.Chart, Cluster: dv.Cluster, Redacted: dv.Redacted, Inert: dv.Inert,
			ChartBytes: dv.ChartSize, ClusterBytes: dv.ClusterSize}
		row.Unstable = unstable[row.Path] || underAny(row.Path, unstable) || aboveAny(row.Path, unstable)
		p.predict(&row)
		row.Moved = p.moved(row.Path, left)
		row.RenderDependent = row.Moved != MovedCluster && m.in.SameInputs
		o.Rows = append(o.Rows, row)
	}
	t.serverSide = p.serverSide
	if t.prev == nil && m.in.Release != "" {
		if reason := helmWouldRefuse(t.live, m.in.Release, m.in.Namespace); reason != "" {
			if m.in.TakeOwnership {
				o.Adopted = true
			} else {
				o.Refused = reason
				for i := range o.Rows {
					o.Rows[i].Resolved, o.Rows[i].Why = false, "the upgrade fails on this object (Helm refuses to adopt it)"
				}
			}
		}
	}
	if !m.probe(ctx, t, &o, desired) {
		m.validateOffline(ctx, t, tm, &o, desired)
	}
	shadows, err := m.shadowRows(ctx, t.ob.Kind, cluster, chart, p.prev, t.id.Namespace)
	if err != nil {
		return o, err
	}
	for i := range shadows {
		shadows[i].Moved = p.moved(shadows[i].Path, left)
		shadows[i].RenderDependent = shadows[i].Moved != MovedCluster && m.in.SameInputs
	}
	o.Rows = append(o.Rows, shadows...)
	return o, nil
}

// compareSides compares an object's two sides, both normalised (normalize.Object), with the
// product's rules: field by field (compare.Compare), inert fields marked, the ignore rules
// applied (matched against the other side's labels and annotations, as Flux matches the live
// object's), the rows folded, and the two sides kept for the line views when views asks. It
// sets o's Compared, Ignored and View, and returns the folded divergences. The other side is
// the live object (Run) or another render (CompareSets): the chain is the same.
func compareSides(tm kyaml.TypeMeta, id manifest.Identity, chart, other map[string]any, rules []flux.IgnoreRule, views bool, o *Object) compare.Result {
	res := compare.Compare(tm, chart, other)
	compare.MarkInert(&res, chart, other)
	md, _ := other["metadata"].(map[string]any)
	group, version := splitAPIVersion(tm.APIVersion)
	o.Ignored = compare.Ignore(&res, rules, compare.Object{Group: group, Version: version, Kind: tm.Kind, Name: id.Name,
		Namespace: id.Namespace, Labels: stringMapOf(md["labels"]), Annotations: stringMapOf(md["annotations"])})
	o.Compared = res.Compared
	compare.Fold(&res)
	if views {
		o.View = compare.NewView(tm, chart, other, res.Divergences)
	}
	return res
}

// desired is t's object decoded, in its namespace.
func (m *measure) desired(t *target) (map[string]any, error) {
	desired, err := t.ob.Decode()
	if err != nil {
		return nil, err
	}
	if t.id.Namespace != "" {
		desired = withNamespace(desired, t.id.Namespace)
	}
	return desired, nil
}

// leftApplied returns the paths at which the live object left what the stored release applied
// (the release's object, normalised offline as the API server would store it), for an object
// the new render changes; nil when the render does not change it (every row is then drift).
func (m *measure) leftApplied(ctx context.Context, t *target, tm kyaml.TypeMeta, p *predictor, cluster map[string]any) map[string]bool {
	if p.prev == nil {
		return nil
	}
	ns := t.id.Namespace
	applied, _, err := m.offline(ctx, t, tm, withNamespace(p.prev, ns), string(Offline))
	if err != nil {
		applied = withNamespace(p.prev, ns)
	}
	res := compare.Compare(tm, normalize.Object(applied, ns), cluster)
	left := make(map[string]bool, len(res.Divergences))
	for _, d := range res.Divergences {
		left[d.Path] = true
	}
	return left
}

func withNamespace(obj map[string]any, ns string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil || md["namespace"] != nil {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	nmd := make(map[string]any, len(md)+1)
	for k, v := range md {
		nmd[k] = v
	}
	nmd["namespace"] = ns
	out["metadata"] = nmd
	return out
}

func stringMapOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

// unstablePaths are the fields of t on which the two renders of the same inputs disagree.
func unstablePaths(tm kyaml.TypeMeta, t *target, desired map[string]any) map[string]bool {
	if t.again == nil || bytes.Equal(t.again.Doc.YAML(), t.ob.Doc.YAML()) {
		return nil
	}
	again, err := t.again.Decode()
	if err != nil {
		return nil
	}
	ns := t.id.Namespace
	out := map[string]bool{}
	for _, d := range compare.Compare(tm, normalize.Object(desired, ns), normalize.Object(withNamespace(again, ns), ns)).Divergences {
		out[d.Path] = true
	}
	return out
}

// nextReconcile rewrites the rows' predictions for a reconcile that does not upgrade: drift
// correction restores what the stored manifest states (it never removes a field only the
// cluster has); nothing resolves nothing.
// xref: helm-controller internal/reconcile/correct_cluster_drift.go (it applies the stored
// manifest's objects that the diff found changed or missing).
func nextReconcile(rows []Row, next flux.Next) {
	for i := range rows {
		r := &rows[i]
		switch next.Action {
		case flux.NextCorrect:
			switch {
			case r.Moved == MovedChart:
				// The cluster still holds what the stored manifest applied: drift correction
				// has nothing to restore, and only an upgrade would bring the render's value.
				r.Resolved, r.Why = false, "drift correction leaves it: the cluster still matches the stored manifest (an upgrade would bring the chart's value)"
			case r.Moved == MovedBoth && r.Class != compare.ClusterOnly:
				r.Resolved, r.Why = false, "drift correction restores the stored manifest's value, not the chart's (an upgrade would bring that)"
			case r.Class == compare.Differs, r.Class == compare.ChartOnly:
				r.Resolved, r.Why = true, "drift correction restores it"
			case r.Class == compare.ClusterOnly:
				r.Resolved, r.Why = false, "drift correction never removes a field only the cluster has"
			default:
				r.Resolved, r.Why = false, "drift correction leaves it: the manifest states the inline entry"
			}
		case flux.NextNothing:
			why, _, _ := strings.Cut(next.Reason, ": ")
			r.Resolved, r.Why = false, "nothing will: "+why
		}
	}
}

// helmWouldRefuse says why Helm would refuse to take live into release/namespace when the
// release's new manifest brings it in: it lacks the label app.kubernetes.io/managed-by=Helm or
// the annotations meta.helm.sh/release-name and -namespace naming this release ("" when it has
// them all).
// xref: Helm v3 pkg/action/validate.go existingResourceConflict, checkOwnership (Helm 4 the
// same).
func helmWouldRefuse(live map[string]any, release, namespace string) string {
	md, _ := live["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	var why []string
	if labels["app.kubernetes.io/managed-by"] != "Helm" {
		why = append(why, `label app.kubernetes.io/managed-by is not "Helm"`)
	}
	if got, _ := ann["meta.helm.sh/release-name"].(string); got != release {
		why = append(why, fmt.Sprintf("annotation meta.helm.sh/release-name is %q, not %q", got, release))
	}
	if got, _ := ann["meta.helm.sh/release-namespace"].(string); got != namespace {
		why = append(why, fmt.Sprintf("annotation meta.helm.sh/release-namespace is %q, not %q", got, namespace))
	}
	if len(why) == 0 {
		return ""
	}
	return "it exists and is not this release's (" + strings.Join(why, "; ") + "): Helm fails with \"invalid ownership metadata\"; --take-ownership adopts it"
}
