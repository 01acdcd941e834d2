// Package diff measures a release against the live cluster: it reads every object of the
// desired manifest with one LIST per kind and namespace (a GET per CRD of a chart's crds/),
// normalises the chart's side to what the API server would store (a server-side dry-run, or
// the API server's own decoding and defaulting run offline by internal/defaulting), compares
// them field by field with internal/drift, and predicts what a helm upgrade to the desired
// manifest would do to each divergence.
package diff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/defaulting"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/memo"
	"github.com/helm-drift/helm-drift/internal/owners"
)

// Normalisation modes.
const (
	// Server defaults the chart's side with a server-side dry-run of each object.
	Server = "server"
	// Offline reproduces the API server's write in process (internal/defaulting): typed decode,
	// defaulting and conversion for built-in kinds, the structural schema for custom resources.
	Offline = "offline"
	// Auto is Server where the dry-run is permitted, Offline per kind where it is forbidden.
	Auto = "auto"
)

// How an upgrade writes the objects, for Input.Apply and Report.Apply.
const (
	ApplyServerSide = "server-side"
	ApplyClientSide = "client-side"
)

// Input is one measurement.
type Input struct {
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
	// Engine says which Helm SDK rendered Desired, and why ("" for a stored manifest).
	Engine string
	// Apply overrides how the upgrade writes the objects (ApplyServerSide, ApplyClientSide;
	// "": as the live objects' managedFields say Helm wrote them).
	Apply string
	// ForceConflicts: the upgrade applies with --force-conflicts; ForceReplace: with --force
	// (Helm 3) or --force-replace (Helm 4), replacing objects.
	ForceConflicts, ForceReplace bool
	// Rules are ignore rules in Flux's syntax (the managing HelmRelease's are added).
	Rules []flux.IgnoreRule
	// Normalize is Server, Offline or Auto.
	Normalize string
	// Workers bounds the concurrent requests (default 8).
	Workers int
	// HelmRelease, when set (namespace/name), is the Flux HelmRelease the desired manifest was
	// rendered from, and HelmReleaseRules its spec.driftDetection.ignore: the managing
	// HelmRelease is then not looked up from the live objects.
	HelmRelease      string
	HelmReleaseRules []flux.IgnoreRule
	// Next, when set, is what helm-controller's next reconcile will do: the rows then say
	// whether that reconcile resolves them, rather than an upgrade to Desired.
	Next *flux.Next
	// Source says where the rendered chart came from ("" for none).
	Source string
	// TakeOwnership: the upgrade (or install) adopts objects that exist without this
	// release's ownership metadata, as helm upgrade --take-ownership (and helm-controller by
	// default) does; without it Helm refuses them.
	TakeOwnership bool
	// CRDs are the CRDs of the chart's crds/ directory (a manifest), measured beside Desired
	// with CRDPolicy's predictions (CRDsHelmInstall, CRDsHelmUpgrade, or helm-controller's
	// CRDsCreate, CRDsCreateReplace, CRDsSkip).
	CRDs, CRDPolicy string
	// Rendered: Desired is a new render (diff upgrade, diff helmrelease), not the stored
	// manifest: each row says who moved, the cluster or the chart.
	Rendered bool
	// SameInputs: the render's inputs (chart and values) equal the stored release's, so a row
	// the chart moved is one the chart renders differently each time or once its objects exist.
	SameInputs bool
	// Lookup says whom the chart's lookup calls were answered as (diff helmrelease of a
	// HelmRelease with a service account; nil otherwise).
	Lookup *Lookup
	// Views keeps each object's two sides (Object.View, Prune.View) for the line views
	// (-o diff, the pull-request comment, an external diff program).
	Views bool
	// Suggest asks for the ignore rules that keep drift correction from fighting the
	// controllers that own fields the chart states (Report.Suggested).
	Suggest bool
}

// Lookup is whom a HelmRelease's render answered the chart's lookup calls as.
type Lookup struct {
	// Account is the service account helm-controller renders as
	// ("system:serviceaccount:NAMESPACE:NAME": spec.serviceAccountName, else the
	// controller's --default-service-account).
	Account string `json:"account"`
	// Impersonated: the render acted as Account too; else as the user, Reason says why.
	Impersonated bool   `json:"impersonated"`
	Reason       string `json:"reason,omitempty"`
}

// Report is the measurement of one release; its JSON form is documented in the README.
type Report struct {
	// Stamp says when and against which cluster (kubeconfig context and API server) the
	// report was measured; the zero value (a report made in a test) prints no footer.
	Stamp
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Normalize is the mode asked for; objects say which one each got.
	Normalize string `json:"normalize"`
	// Engine says which Helm SDK rendered the desired manifest and why (diff upgrade only).
	Engine string `json:"engine,omitempty"`
	// Defaulting says whose defaulting code the offline normalisation ran when it is not that
	// of the cluster's own Kubernetes minor version (absent when it is).
	Defaulting string `json:"defaulting,omitempty"`
	// Apply says how Helm writes this release: "client-side" (Helm 3's three-way merge) or
	// "server-side" (Helm 4), read from the live objects' managedFields.
	Apply string `json:"apply"`
	// HelmRelease is the Flux HelmRelease that manages the release, whose ignore rules apply.
	HelmRelease string `json:"helmRelease,omitempty"`
	// Source says where a HelmRelease's chart came from (diff helmrelease only).
	Source string `json:"source,omitempty"`
	// Lookup says whom the chart's lookup calls were answered as (diff helmrelease only).
	Lookup *Lookup `json:"lookup,omitempty"`
	// Next is what helm-controller's next reconcile will do (diff helmrelease only); each
	// row's resolvedByUpgrade then says whether that reconcile resolves it.
	Next *flux.Next `json:"nextReconcile,omitempty"`
	// Divergences counts the rows that are drift (SHADOWS whose values agree are not).
	Divergences int `json:"divergences"`
	// Compared counts the fields compared.
	Compared int `json:"compared"`
	// Counts counts rows by class.
	Counts map[compare.Class]int `json:"counts"`
	// PendingDeletions counts fields an upgrade would remove.
	PendingDeletions int `json:"pendingDeletions"`
	// Unstable counts the rows whose chart value differs between two renders of the same
	// inputs; they are drift only with Input.CountUnstable.
	Unstable int `json:"unstable"`
	// CountedUnstable: the unstable rows are counted in Divergences.
	CountedUnstable bool `json:"countedUnstable,omitempty"`
	// Refused counts the objects Helm would refuse to adopt (the upgrade fails on them).
	Refused int `json:"refused"`
	// WillFail counts the objects the API server refuses (WILL-FAIL): the upgrade fails.
	WillFail int `json:"willFail"`
	// DriftRows counts the counted rows the cluster moved (alone or with the chart): the live
	// object left what was applied. Changes counts those only the chart moved: the upgrade
	// brings them, nobody drifted.
	DriftRows int `json:"drift"`
	Changes   int `json:"changes"`
	// Rendered: the desired manifest is a new render, so rows say who moved (see Input).
	Rendered bool `json:"-"`
	// Unmeasured counts the objects that could not be measured (each says why in its error).
	Unmeasured int      `json:"unmeasured"`
	Objects    []Object `json:"objects"`
	// Prune lists the objects of the release the desired manifest drops.
	Prune []Prune `json:"prune"`
	// Suggested are the ignore rules --suggest-ignore asked for (Input.Suggest).
	Suggested *advise.Advice `json:"suggestedIgnore,omitempty"`
}

// Object is the measurement of one object.
type Object struct {
	// Object names it: "Deployment.apps web -n apps".
	Object string `json:"object"`
	// Missing: the chart renders it, the cluster lacks it.
	Missing bool `json:"missing,omitempty"`
	// Error says why the object could not be measured (it then has no rows).
	Error string `json:"error,omitempty"`
	// Normalize is the mode this object got, with the reason when it is not the one asked for.
	Normalize string `json:"normalize"`
	// Compared counts the fields compared; Ignored those divergences ignore rules dropped.
	Compared int   `json:"compared"`
	Ignored  int   `json:"ignored,omitempty"`
	Rows     []Row `json:"divergences"`
	// Refused says why Helm would refuse this object: new to the release, it exists in the
	// cluster without the release's ownership metadata (the upgrade then fails on it).
	// Adopted: the same, taken over with --take-ownership.
	Refused string `json:"refused,omitempty"`
	Adopted bool   `json:"adopted,omitempty"`
	// Refusal: the API server refuses the write the upgrade would make (a dry run said so):
	// the upgrade fails on this object (WILL-FAIL).
	Refusal *Refusal `json:"refusal,omitempty"`
	// View is the object's two sides for the line views, when Input.Views asked for it
	// (a Secret's values redacted).
	View *compare.View `json:"-"`
}

// Row is one divergence.
type Row struct {
	Class   compare.Class `json:"class"`
	Path    string        `json:"path"`
	Pointer string        `json:"pointer"`
	Chart   any           `json:"chart,omitempty"`
	Cluster any           `json:"cluster,omitempty"`
	// Redacted: a Secret's data, whose values are never printed.
	Redacted bool `json:"redacted,omitempty"`
	// ChartBytes and ClusterBytes are a redacted value's sizes, so a changed key shows as
	// changed (a data value's decoded size).
	ChartBytes   *int `json:"chartBytes,omitempty"`
	ClusterBytes *int `json:"clusterBytes,omitempty"`
	// Inert: changes nothing in the running pod.
	Inert bool `json:"inert,omitempty"`
	// PendingDeletion: in the release's last manifest, not in the desired one: an upgrade
	// removes it.
	PendingDeletion bool `json:"pendingDeletion,omitempty"`
	// Resolved says whether the upgrade would make the cluster match the chart here; Why says
	// what it would do.
	Resolved bool   `json:"resolvedByUpgrade"`
	Why      string `json:"upgrade"`
	// Unstable: two renders of the same inputs disagree on this field (random values,
	// timestamps): every upgrade changes it, so it is not counted as drift by default.
	Unstable bool `json:"unstable,omitempty"`
	// Moved says who moved the field away from what the stored release applied: MovedCluster
	// (drift), MovedChart (the new render differs from what was applied; the live object
	// still equals it) or MovedBoth.
	Moved string `json:"moved,omitempty"`
	// RenderDependent: the chart moved it although the render's chart and values equal the
	// stored release's: the chart renders it differently each time, or once its objects exist
	// (lookup).
	RenderDependent bool `json:"renderDependent,omitempty"`
	// Managers are the field managers other than Helm's that own the cluster's value.
	Managers []string `json:"managers,omitempty"`
	// From and Agree, for SHADOWS: the envFrom source the inline entry hides, and whether
	// the two values agree (absent when they cannot be compared).
	From  string `json:"from,omitempty"`
	Agree *bool  `json:"agree,omitempty"`
}

// Who moved a field (Row.Moved).
const (
	MovedCluster = "cluster"
	MovedChart   = "chart"
	MovedBoth    = "both"
)

// Prune is an object of the release that the desired manifest no longer renders.
type Prune struct {
	Object string `json:"object"`
	// Keep: helm.sh/resource-policy: keep, so Helm leaves it in the cluster.
	Keep bool `json:"keep,omitempty"`
	// Live: the object exists in the cluster.
	Live bool `json:"live"`
	// View is the live object, for the line views (Input.Views; nil when not live).
	View *compare.View `json:"-"`
}

// Measured reports whether every object could be measured.
func (r *Report) Measured() bool { return r.Unmeasured == 0 }

// Drifted reports whether the cluster moved anywhere (a counted row the cluster moved, alone or
// with the chart), or the upgrade will fail, for --exit-code-on=drift.
func (r *Report) Drifted() bool { return r.DriftRows > 0 || r.WillFail > 0 }

// Drift reports whether the report shows any drift, or an object an upgrade would really
// delete: one kept by helm.sh/resource-policy: keep, or already gone, is listed but is no
// change on its own.
func (r *Report) Drift() bool {
	if r.Divergences > 0 || r.PendingDeletions > 0 || r.Refused > 0 || r.WillFail > 0 {
		return true
	}
	for _, p := range r.Prune {
		if p.Live && !p.Keep {
			return true
		}
	}
	return false
}

// Cluster is what a measurement reads of the cluster: kind scopes and metadata (the
// second-owner check), one LIST of whole objects per kind and namespace, the few objects a
// row refers to (envFrom sources, the managing HelmRelease), a kind's resource name and CRD
// schema, a dry-run create and apply, and the server's version. *live.Client is one; a kind the cluster
// does not serve is live.ErrNotServed.
type Cluster interface {
	owners.Cluster
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
	checker := owners.NewChecker(append(all, crds...), owners.Options{Namespace: in.Namespace, Scopes: owners.ClusterScopes(cl)})
	m := &measure{in: in, cl: cl, checker: checker, lists: map[listKey]*listing{}, dryRun: map[string]string{}, probeDenied: map[string]bool{}}

	byID := func(objs []manifest.Object, same bool) map[manifest.Identity]manifest.Object {
		if same {
			return nil // each desired object is its own
		}
		ix := map[manifest.Identity]manifest.Object{}
		for _, o := range objs {
			if !o.Hook && o.Name != "" {
				ix[checker.Identity(o)] = o
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
		id := checker.Identity(o)
		desiredIDs[id] = true
		t := &target{ob: o, id: id, prev: counterpart(prevByID, sameStored, o, id), again: counterpart(againByID, sameRender, o, id)}
		targets = append(targets, t)
	}
	for _, o := range crds {
		id := checker.Identity(o)
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
		m.listingFor(o, checker.Identity(o))
	}
	if err := m.listAll(ctx); err != nil {
		return nil, err
	}
	for _, t := range targets {
		t.live = m.lists[keyOf(t.ob, t.id)].byName[t.ob.Name]
	}
	rep := &Report{Release: in.Release, Namespace: in.Namespace, Revision: in.Revision, Normalize: in.Normalize, Rendered: in.Rendered,
		Engine: in.Engine, Defaulting: defaulting.Emulate(cl.ServerVersion()), CountedUnstable: in.CountUnstable,
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
	rep.Source, rep.Next, rep.Lookup = in.Source, in.Next, in.Lookup
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
		id := checker.Identity(o)
		live := m.lists[keyOf(o, id)].byName[o.Name]
		p := Prune{Object: id.String(), Live: live != nil}
		if in.Views && live != nil {
			p.View = compare.OneSide(nil, compare.Normalize(live, ""))
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

type listKey struct{ group, version, kind, namespace string }

type listing struct {
	byName map[string]map[string]any
	// names: the objects to read one by one (a kind whose LIST would read far more than the
	// release holds); nil for a LIST.
	names []string
	// notServed: the cluster does not serve the kind (its CRD is not installed).
	notServed bool
	// err: the read failed; the kind's objects cannot be measured.
	err error
}

// readByName are the kinds read with a GET per object rather than one LIST: a cluster's
// CustomResourceDefinitions are its largest objects, often hundreds of them, of which a chart
// brings a few (a LIST of them read every CRD of the cluster, each schema in full).
func readByName(k listKey) bool {
	return k.group == "apiextensions.k8s.io" && k.kind == "CustomResourceDefinition"
}

// measure holds what one Run shares between objects.
type measure struct {
	in      Input
	cl      Cluster
	checker *owners.Checker
	rules   []flux.IgnoreRule
	lists   map[listKey]*listing

	sources    memo.Map[string, source]
	crdSchemas memo.Map[string, readySchema]

	mu     sync.Mutex
	dryRun map[string]string // resource → why the dry-run is not used for it ("" = use it)
	// probeDenied are the resources whose dry-run write the user may not make.
	probeDenied map[string]bool
}

func keyOf(o manifest.Object, id manifest.Identity) listKey {
	_, version := splitAPIVersion(o.APIVersion)
	return listKey{id.Group, version, id.Kind, id.Namespace}
}

// listingFor adds the read of o to m.lists.
func (m *measure) listingFor(o manifest.Object, id manifest.Identity) {
	k := keyOf(o, id)
	l := m.lists[k]
	if l == nil {
		l = &listing{}
		m.lists[k] = l
	}
	if readByName(k) {
		l.names = append(l.names, o.Name)
	}
}

// listAll makes the reads of m.lists, at most Workers at a time: one LIST per kind and
// namespace, or a GET per object of a kind read by name.
func (m *measure) listAll(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.in.Workers)
	for k, l := range m.lists {
		if readByName(k) {
			l.byName = make(map[string]map[string]any, len(l.names))
			var mu sync.Mutex
			for _, name := range l.names {
				g.Go(func() error {
					obj, err := m.cl.Get(gctx, k.group, k.version, k.kind, k.namespace, name)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case apierrors.IsNotFound(err):
					case err != nil:
						if l.err == nil {
							l.err = m.explain(err, "get", k.group, k.version, k.kind, k.namespace)
						}
					default:
						l.byName[name] = obj
					}
					return nil
				})
			}
			continue
		}
		g.Go(func() error {
			items, err := m.cl.ListObjects(gctx, k.group, k.version, k.kind, k.namespace)
			l.notServed = errors.Is(err, live.ErrNotServed)
			if err != nil && !l.notServed {
				l.err = m.explain(err, "list", k.group, k.version, k.kind, k.namespace)
				return nil // the kind's objects carry it
			}
			l.byName = make(map[string]map[string]any, len(items))
			for _, it := range items {
				if md, ok := it["metadata"].(map[string]any); ok {
					n, _ := md["name"].(string)
					l.byName[n] = it
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// explain turns a 403 into the permission that is missing.
func (m *measure) explain(err error, verb, group, version, kind, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	res, rerr := m.cl.Resource(group, version, kind)
	if rerr != nil {
		res = strings.ToLower(kind)
	}
	where := "cluster-wide"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	return fmt.Errorf("forbidden: needs %s on %s %s (grant it, or leave the kind out of the release): %w", verb, res, where, err)
}

// object measures one desired object.
func (m *measure) object(ctx context.Context, t *target) (Object, error) {
	o := Object{Object: t.id.String(), Rows: []Row{}, Normalize: Offline}
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
		if notServed {
			row.Resolved, row.Why = false, "fails: the cluster does not serve "+t.ob.Kind+" "+t.ob.APIVersion+" (install its CRD first)"
		}
		o.Rows = append(o.Rows, row)
		if desired, err := t.ob.Decode(); err == nil && !notServed {
			if t.id.Namespace != "" {
				desired = withNamespace(desired, t.id.Namespace)
			}
			if m.in.Views {
				o.View = compare.OneSide(compare.Normalize(desired, t.id.Namespace), nil)
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
	chart := compare.Normalize(chartSide, t.id.Namespace)
	cluster := compare.Normalize(t.live, "")
	res := compare.Compare(tm, chart, cluster)
	compare.MarkInert(&res, chart, cluster)
	md, _ := cluster["metadata"].(map[string]any)
	group, version := splitAPIVersion(t.ob.APIVersion)
	o.Ignored = compare.Ignore(&res, m.rules, compare.Object{Group: group, Version: version, Kind: t.ob.Kind, Name: t.ob.Name,
		Namespace: t.id.Namespace, Labels: stringMapOf(md["labels"]), Annotations: stringMapOf(md["annotations"])})
	o.Compared = res.Compared
	compare.Fold(&res)
	if m.in.Views {
		o.View = compare.NewView(tm, chart, cluster, res.Divergences)
	}

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
	applied, _, err := m.offline(ctx, t, tm, withNamespace(p.prev, ns), Offline)
	if err != nil {
		applied = withNamespace(p.prev, ns)
	}
	res := compare.Compare(tm, compare.Normalize(applied, ns), cluster)
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
	for _, d := range compare.Compare(tm, compare.Normalize(desired, ns), compare.Normalize(withNamespace(again, ns), ns)).Divergences {
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

// suggest asks the advisor for the ignore rules of the measured objects' DIFFERS rows, with the
// HorizontalPodAutoscalers of the namespaces whose workloads' replicas differ.
func suggest(ctx context.Context, cl Cluster, targets []*target, objs []Object) *advise.Advice {
	var in []advise.Object
	scaled := map[string]bool{}
	for i, t := range targets {
		if t.live == nil || objs[i].Error != "" {
			continue
		}
		group, version := splitAPIVersion(t.ob.APIVersion)
		o := advise.Object{Group: group, Version: version, Kind: t.ob.Kind, Namespace: t.id.Namespace, Name: t.ob.Name, Title: objs[i].Object, Live: t.live}
		for _, r := range objs[i].Rows {
			if r.Class == compare.Differs && r.Pointer != "" {
				o.Fields = append(o.Fields, advise.Field{Path: r.Path, Pointer: r.Pointer})
				if r.Pointer == "/spec/replicas" {
					scaled[t.id.Namespace] = true
				}
			}
		}
		if len(o.Fields) > 0 {
			in = append(in, o)
		}
	}
	var scalers []advise.Scaler
	var unread []string
	for ns := range scaled {
		hpas, err := cl.ListObjects(ctx, "autoscaling", "v2", "HorizontalPodAutoscaler", ns)
		if err != nil {
			unread = append(unread, ns+": "+err.Error())
			continue
		}
		for _, h := range hpas {
			md, _ := h["metadata"].(map[string]any)
			spec, _ := h["spec"].(map[string]any)
			ref, _ := spec["scaleTargetRef"].(map[string]any)
			name, _ := md["name"].(string)
			kind, _ := ref["kind"].(string)
			target, _ := ref["name"].(string)
			apiVersion, _ := ref["apiVersion"].(string)
			g, _ := splitAPIVersion(apiVersion)
			scalers = append(scalers, advise.Scaler{Namespace: ns, Name: name, TargetGroup: g, TargetKind: kind, TargetName: target})
		}
	}
	a := advise.Advise(in, scalers)
	sort.Strings(unread)
	for _, u := range unread {
		a.Notes = append(a.Notes, "could not read the HorizontalPodAutoscalers of "+u+": a replicas field an HPA owns is judged by its manager's name only")
	}
	return a
}
