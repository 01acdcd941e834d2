package diff

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/kubeapis"
	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/helm-drift/helm-drift/internal/normalize/defaulting"
)

// Options are how a measurement compares: the same for every release of a run.
type Options struct {
	// Rules are ignore rules in Flux's syntax (the managing HelmRelease's are added).
	Rules []flux.IgnoreRule
	// Normalize is Server, Offline or Auto.
	Normalize Mode
	// Workers bounds the concurrent requests (default 8).
	Workers int
	// Views keeps each object's two sides (Object.View, Prune.View) for the line views
	// (-o diff, the pull-request comment, an external diff program).
	Views bool
	// Suggest asks for the ignore rules that keep drift correction from fighting the
	// controllers that own fields the chart states (Report.Suggested).
	Suggest bool
}

// Input is one measurement: one release's manifests, and how to compare them. What only the
// report carries (which SDK rendered, the chart's source, as whom lookup was answered) the
// caller sets on the report.
type Input struct {
	Options
	Release, Namespace string
	Revision           int
	// Desired is the manifest an upgrade would install (for "diff release", the stored one).
	Desired string
	// Previous is the release's stored manifest: what the upgrade starts from.
	Previous string
	// Rerender is a second render of the same inputs as Desired ("" for none): a field whose
	// value differs between the two (a random password, a timestamp) is unstable.
	Rerender string
	// CountUnstable counts unstable rows as drift (by default they are reported, not counted).
	CountUnstable bool
	// Apply overrides how the upgrade writes the objects (ApplyServerSide, ApplyClientSide;
	// "": as the live objects' managedFields say Helm wrote them).
	Apply Apply
	// ForceConflicts: the upgrade applies with --force-conflicts; ForceReplace: with --force
	// (Helm 3) or --force-replace (Helm 4), replacing objects.
	ForceConflicts, ForceReplace bool
	// HelmRelease, when set (namespace/name), is the Flux HelmRelease the desired manifest was
	// rendered from, and HelmReleaseRules its spec.driftDetection.ignore: the managing
	// HelmRelease is then not looked up from the live objects.
	HelmRelease      string
	HelmReleaseRules []flux.IgnoreRule
	// Next, when set, is what helm-controller's next reconcile will do: the rows then say
	// whether that reconcile resolves them, rather than an upgrade to Desired.
	Next *flux.Next
	// TakeOwnership: the upgrade (or install) adopts objects that exist without this
	// release's ownership metadata, as helm upgrade --take-ownership (and helm-controller by
	// default) does; without it Helm refuses them.
	TakeOwnership bool
	// CRDs are the CRDs of the chart's crds/ directory (a manifest), measured beside Desired
	// with CRDPolicy's predictions (CRDsHelmInstall, CRDsHelmUpgrade, or helm-controller's
	// CRDsCreate, CRDsCreateReplace, CRDsSkip).
	CRDs      string
	CRDPolicy CRDPolicy
	// Rendered: Desired is a new render (diff upgrade, diff helmrelease), not the stored
	// manifest: each row says who moved, the cluster or the chart.
	Rendered bool
	// SameInputs: the render's inputs (chart and values) equal the stored release's, so a row
	// the chart moved is one the chart renders differently each time or once its objects exist.
	SameInputs bool
}

// Cluster is what a measurement reads of the cluster: kind scopes and metadata (the
// second-owner check), one LIST of whole objects per kind and namespace, the few objects a
// row refers to (envFrom sources, the managing HelmRelease), a kind's resource name and CRD
// schema, a dry-run create and apply, and the server's version. *live.Client is one; a kind the cluster
// does not serve is live.ErrNotServed.
type Cluster interface {
	// Namespaced says whether a kind is namespaced; List reads a kind's objects' metadata.
	Namespaced(group, version, kind string) (bool, error)
	List(ctx context.Context, group, version, kind, namespace string) ([]live.Meta, error)
	ListObjects(ctx context.Context, group, version, kind, namespace string) ([]map[string]any, error)
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
	Resource(group, version, kind string) (string, error)
	CRDSchema(ctx context.Context, group, version, kind string) (map[string]any, error)
	DryRunCreate(ctx context.Context, obj map[string]any, name string) (map[string]any, error)
	DryRunApply(ctx context.Context, obj map[string]any) (map[string]any, error)
	// ServerVersion is the API server's version ("v1.34.2").
	ServerVersion() string
}

// Run measures in against the cluster. An object or kind it cannot read fails that object, not
// the run: the object carries the error and Unmeasured counts it, so a report is never clean by
// omission. Only what every object depends on (the cluster, the managing HelmRelease) fails the
// run.
func Run(ctx context.Context, cl Cluster, in Input) (*Report, error) {
	if in.Workers <= 0 {
		in.Workers = 8
	}
	desired, err := objectsOf(in.Desired, "desired manifest")
	if err != nil {
		return nil, err
	}
	// diff release: the stored manifest is both sides; a second render that is the first byte
	// for byte has nothing unstable. Either is the desired objects themselves.
	sameStored, sameRender := in.Previous == in.Desired, in.Rerender == in.Desired
	previous, rerender := desired, desired
	if !sameStored {
		if previous, err = objectsOf(in.Previous, "stored manifest"); err != nil {
			return nil, err
		}
	}
	if !sameRender {
		if rerender, err = objectsOf(in.Rerender, "second render"); err != nil {
			return nil, err
		}
	}
	crds, err := objectsOf(in.CRDs, "the chart's crds/")
	if err != nil {
		return nil, err
	}
	// The objects hold the documents' bytes; the manifests' text is not needed again.
	in.Desired, in.Previous, in.Rerender, in.CRDs = "", "", "", ""
	all := append([]manifest.Object{}, desired...)
	if !sameStored {
		all = append(all, previous...)
	}
	ids := manifest.NewIdentifier(append(all, crds...), in.Namespace, live.Scopes(cl))
	m := &measure{in: in, cl: cl, ids: ids, lists: map[listKey]*listing{}, dryRun: map[string]string{}, probeDenied: map[string]bool{}}

	byID := func(objs []manifest.Object, same bool) map[manifest.Identity]manifest.Object {
		if same {
			return nil // each desired object is its own
		}
		ix := map[manifest.Identity]manifest.Object{}
		for _, o := range objs {
			if !o.Hook && o.Name != "" {
				ix[ids.Identity(o)] = o
			}
		}
		return ix
	}
	prevByID, againByID := byID(previous, sameStored), byID(rerender, sameRender)
	counterpart := func(ix map[manifest.Identity]manifest.Object, same bool, o manifest.Object, id manifest.Identity) *manifest.Object {
		if same {
			return &o
		}
		if c, ok := ix[id]; ok {
			return &c
		}
		return nil
	}
	var targets []*target
	desiredIDs := map[manifest.Identity]bool{}
	for _, o := range desired {
		if o.Hook || o.Name == "" {
			continue
		}
		id := ids.Identity(o)
		desiredIDs[id] = true
		t := &target{ob: o, id: id, prev: counterpart(prevByID, sameStored, o, id), again: counterpart(againByID, sameRender, o, id)}
		targets = append(targets, t)
	}
	for _, o := range crds {
		id := ids.Identity(o)
		if o.Kind != "CustomResourceDefinition" || desiredIDs[id] {
			continue // a template of the same CRD is the release's own
		}
		desiredIDs[id] = true
		t := &target{ob: o, id: id, crd: true}
		if in.CRDPolicy != CRDsHelmInstall && in.Revision > 0 {
			// Installed from crds/ with the release: what was applied is the chart's CRD, so a
			// field the cluster holds otherwise moved there.
			t.prev, t.again = &o, &o
		}
		targets = append(targets, t)
	}
	if in.CRDPolicy == CRDsHelmInstall || in.CRDPolicy == CRDsCreate || in.CRDPolicy == CRDsCreateReplace {
		// The crds/ CRDs the cluster lacks are created before the release's objects: those
		// of their kinds are created too, not refused.
		m.crdServes = map[string]bool{}
		for _, o := range crds {
			if d, err := o.Decode(); err == nil && o.Kind == "CustomResourceDefinition" {
				for _, v := range kubeapis.CRDServes(d) {
					m.crdServes[v] = true
				}
			}
		}
	}
	var pruned []manifest.Object
	for id, o := range prevByID {
		if !desiredIDs[id] {
			pruned = append(pruned, o)
		}
	}
	if !sameStored {
		keepChangedOnly(targets, pruned)
	}
	// One LIST per kind and namespace (a GET per object of a kind read by name), concurrently.
	for _, t := range targets {
		m.listingFor(t.ob, t.id)
	}
	for _, o := range pruned {
		m.listingFor(o, ids.Identity(o))
	}
	if err := m.listAll(ctx); err != nil {
		return nil, err
	}
	for _, t := range targets {
		t.live = m.lists[keyOf(t.ob, t.id)].byName[t.ob.Name]
	}
	rep := &Report{Release: in.Release, Namespace: in.Namespace, Revision: in.Revision, Normalize: in.Normalize, Rendered: in.Rendered,
		Defaulting: defaulting.Emulate(cl.ServerVersion()), CountedUnstable: in.CountUnstable,
		Apply: ApplyClientSide, Counts: map[compare.Class]int{}, Objects: []Object{}, Prune: []Prune{}}
	var lives []map[string]any
	for _, t := range targets {
		if t.live != nil {
			lives = append(lives, t.live)
		}
	}
	hrRules, hrName := in.HelmReleaseRules, in.HelmRelease
	if hrName == "" {
		hrRules, hrName, err = helmReleaseIgnore(ctx, cl, lives)
		if err != nil {
			return nil, err
		}
	}
	rep.Next = in.Next
	rep.HelmRelease = hrName
	m.rules = append(append([]flux.IgnoreRule{}, in.Rules...), hrRules...)

	// Offline, an object's measure asks the cluster nothing: more objects at once than CPUs
	// would gain no time and hold more objects in flight.
	perObject := in.Workers
	if in.Normalize == Offline {
		perObject = max(1, min(perObject, runtime.GOMAXPROCS(0)))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(perObject)
	objs := make([]Object, len(targets))
	for _, i := range largestFirst(targets) {
		t := targets[i]
		g.Go(func() error {
			o, err := m.object(gctx, t)
			if err != nil {
				o = Object{Object: t.id.String(), Normalize: "-", Error: err.Error(), Rows: []Row{}}
			}
			objs[i] = o
			return nil
		})
	}
	g.Wait()
	if in.Next != nil {
		for i := range objs {
			if !targets[i].crd {
				nextReconcile(objs[i].Rows, *in.Next)
			}
		}
	}
	for i, t := range targets {
		if t.crd {
			crdRows(&objs[i], in.CRDPolicy)
		}
	}
	for i, o := range objs {
		if o.Error != "" {
			rep.Unmeasured++
		}
		if o.Refused != "" {
			rep.Refused++
		}
		if o.Refusal != nil {
			rep.WillFail++
		}
		if targets[i].serverSide {
			rep.Apply = ApplyServerSide
		}
		for _, r := range o.Rows {
			rep.Counts[r.Class]++
			if r.PendingDeletion {
				rep.PendingDeletions++
			}
			if r.Unstable {
				rep.Unstable++
				if !in.CountUnstable {
					continue
				}
			}
			if r.Class != compare.Shadows || r.Agree == nil || !*r.Agree {
				rep.Divergences++ // a hidden value that differs, or cannot be told, is a surprise
				if r.Moved == MovedChart {
					rep.Changes++
				} else {
					rep.DriftRows++
				}
			}
		}
		rep.Compared += o.Compared
		rep.Objects = append(rep.Objects, o)
	}
	for _, o := range pruned {
		id := ids.Identity(o)
		live := m.lists[keyOf(o, id)].byName[o.Name]
		p := Prune{Object: id.String(), Live: live != nil}
		if in.Views && live != nil {
			p.View = compare.OneSide(nil, normalize.Object(live, ""))
		}
		if d, err := o.Decode(); err == nil {
			md, _ := d["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			p.Keep = ann["helm.sh/resource-policy"] == "keep"
		}
		rep.Prune = append(rep.Prune, p)
	}
	if in.Suggest {
		rep.Suggested = suggest(ctx, cl, targets, objs)
	}
	sort.SliceStable(rep.Objects, func(i, j int) bool { return rep.Objects[i].Object < rep.Objects[j].Object })
	sort.Slice(rep.Prune, func(i, j int) bool { return rep.Prune[i].Object < rep.Prune[j].Object })
	return rep, nil
}

// largestFirst is the order in which to measure targets: the largest documents first (a
// chart's CRDs can be most of its stream), so that the workers do not end on one large object
// while the others idle. The report's order is the targets' own.
func largestFirst(targets []*target) []int {
	order, size := make([]int, len(targets)), make([]int, len(targets))
	for i, t := range targets {
		order[i], size[i] = i, len(t.ob.Doc.YAML())
	}
	sort.SliceStable(order, func(a, b int) bool { return size[order[a]] > size[order[b]] })
	return order
}

func objectsOf(text, what string) ([]manifest.Object, error) {
	s, err := manifest.Split([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	objs, err := manifest.Objects(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return objs, nil
}

// keepChangedOnly lets the stored manifest's bytes go, keeping of it only what differs from
// the new render: an object whose stored document is the new one byte for byte is the desired
// object itself; a changed or pruned one keeps a copy of its own document. In most upgrades
// most objects do not change. A List's item keeps its document (its node is parsed from it).
func keepChangedOnly(targets []*target, pruned []manifest.Object) {
	for _, t := range targets {
		switch {
		case t.crd || t.prev == nil || t.prev.Item >= 0:
		case t.ob.Item < 0 && bytes.Equal(t.prev.Doc.YAML(), t.ob.Doc.YAML()):
			p := t.ob
			t.prev = &p
		default:
			t.prev.Doc = t.prev.Doc.Detached()
		}
	}
	for i := range pruned {
		if pruned[i].Item < 0 {
			pruned[i].Doc = pruned[i].Doc.Detached()
		}
	}
}

// target is one desired object with what was found of it.
type target struct {
	// crd: a CRD of the chart's crds/ directory, outside the release.
	crd        bool
	ob         manifest.Object
	id         manifest.Identity
	prev       *manifest.Object
	again      *manifest.Object // the same object in the second render
	live       map[string]any
	serverSide bool
}
