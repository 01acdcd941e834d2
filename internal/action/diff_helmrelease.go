package action

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	release4 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// HelmReleaseTarget is one HelmRelease to diff: from the cluster, or as written in a file
// (with the files' other objects to read its sources and values from first).
type HelmReleaseTarget struct {
	// Object is the HelmRelease.
	Object map[string]any
	// Where names it in messages: "HelmRelease apps/web" or "hr.yaml: document 2".
	Where  string
	stream *helmcontroller.StreamFirst
}

// name is "NAMESPACE/NAME".
func (t HelmReleaseTarget) name() string {
	md, _ := t.Object["metadata"].(map[string]any)
	return fmt.Sprint(md["namespace"]) + "/" + fmt.Sprint(md["name"])
}

// File is one file of HelmReleases as written in Git.
type File struct {
	// Name names it in messages ("-" for stdin).
	Name string
	Data []byte
}

// HelmReleaseFiles reads the HelmReleases of files, without the cluster: every one, or the one
// named only (NAME or NAMESPACE/NAME). An object without a namespace is in namespace. The
// files' other objects (a source, a values ConfigMap or Secret) answer the HelmReleases'
// reads first; the cluster, once DiffHelmRelease runs, what they do not hold.
func HelmReleaseFiles(files []File, namespace, only string) ([]HelmReleaseTarget, error) {
	sg := &helmcontroller.StreamFirst{}
	var names []string
	var targets []HelmReleaseTarget
	for _, f := range files {
		names = append(names, f.Name)
		st, err := manifest.Split(f.Data)
		if err != nil {
			return nil, &InputError{Err: fmt.Errorf("--file %s: %w", f.Name, err)}
		}
		objs, err := manifest.Objects(st)
		if err != nil {
			return nil, &InputError{Err: fmt.Errorf("--file %s: %w", f.Name, err)}
		}
		for _, ob := range objs {
			m, err := ob.Decode()
			if err != nil {
				return nil, &InputError{Err: fmt.Errorf("--file %s: %s: %w", f.Name, ob.Where(), err)}
			}
			ns := ob.Namespace
			if ns == "" {
				ns = namespace
				md, _ := m["metadata"].(map[string]any)
				md["namespace"] = ns
			}
			sg.Add(ob.Group(), ob.Kind, ns, ob.Name, func() (map[string]any, error) { return m, nil })
			if ob.Kind == flux.HelmReleaseKind && ob.Group() == flux.HelmReleaseGroup {
				targets = append(targets, HelmReleaseTarget{Object: m, Where: f.Name + ": " + ob.Where(), stream: sg})
			}
		}
	}
	if only != "" {
		var picked []HelmReleaseTarget
		for _, t := range targets {
			md, _ := t.Object["metadata"].(map[string]any)
			if n, _ := md["name"].(string); n == only || t.name() == only {
				picked = append(picked, t)
			}
		}
		if len(picked) == 0 {
			return nil, &InputError{Err: fmt.Errorf("--file: no HelmRelease %s in %s", only, strings.Join(names, ", "))}
		}
		targets = picked
	}
	if len(targets) == 0 {
		return nil, &InputError{Err: fmt.Errorf("--file %s: no HelmRelease (%s/%s) in it", strings.Join(names, ", "), flux.HelmReleaseGroup, flux.HelmReleaseVersion)}
	}
	return targets, nil
}

// DiffHelmRelease compares what helm-controller would install for a Flux HelmRelease now with
// the cluster, with its next reconcile's predictions.
type DiffHelmRelease struct {
	Config *Configuration
	Measure
	HelmReleaseOptions
	// ManifestOnly renders and measures nothing: Result.Manifest only.
	ManifestOnly bool

	impersonation impersonation
}

// HelmReleaseOptions are the choices of a diff helmrelease run that its flags set.
type HelmReleaseOptions struct {
	// PlainHTTP reaches a source's registry over plain HTTP.
	PlainHTTP bool
	// CountUnstable counts as drift the fields on which two renders of the same inputs
	// disagree (random values, timestamps).
	CountUnstable bool
	// DefaultServiceAccount is helm-controller's --default-service-account: the account of
	// a HelmRelease without spec.serviceAccountName ("": the controller's own).
	DefaultServiceAccount string
}

// Get reads HelmRelease namespace/name from the cluster.
func (d *DiffHelmRelease) Get(ctx context.Context, namespace, name string) (HelmReleaseTarget, error) {
	cl, err := d.Config.Live(ctx)
	if err != nil {
		return HelmReleaseTarget{}, err
	}
	obj, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, namespace, name)
	if apierrors.IsNotFound(err) {
		return HelmReleaseTarget{}, &InputError{Err: fmt.Errorf("no HelmRelease %s/%s (%s/%s): check the name and -n, or diff one as written with --file", namespace, name, flux.HelmReleaseGroup, flux.HelmReleaseVersion)}
	}
	if err != nil {
		return HelmReleaseTarget{}, fmt.Errorf("HelmRelease %s/%s: %w", namespace, name, err)
	}
	return HelmReleaseTarget{Object: obj, Where: "HelmRelease " + namespace + "/" + name}, nil
}

// List reads the HelmReleases of namespace ("" for every namespace) from the cluster.
func (d *DiffHelmRelease) List(ctx context.Context, namespace string) ([]HelmReleaseTarget, error) {
	objs, err := listHelmReleases(ctx, d.Config, namespace)
	if err != nil {
		return nil, err
	}
	targets := make([]HelmReleaseTarget, 0, len(objs))
	for _, m := range objs {
		t := HelmReleaseTarget{Object: m}
		t.Where = "HelmRelease " + t.name()
		targets = append(targets, t)
	}
	return targets, nil
}

// RunAllIn measures every HelmRelease of namespace ("" for every namespace), one summary row
// each: List, then RunAll.
func (d *DiffHelmRelease) RunAllIn(ctx context.Context, namespace string) (*Summary, error) {
	targets, err := d.List(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return d.RunAll(ctx, targets)
}

// connect lets the files' objects fall back on the cluster, once, before any target runs.
func (d *DiffHelmRelease) connect(ctx context.Context, targets []HelmReleaseTarget) error {
	cl, err := d.Config.Live(ctx)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if t.stream != nil && t.stream.Cluster == nil {
			t.stream.Cluster = cl
		}
	}
	return nil
}

// Run renders t as helm-controller would and measures the render against the cluster.
func (d *DiffHelmRelease) Run(ctx context.Context, t HelmReleaseTarget) (*Result, error) {
	if err := d.connect(ctx, []HelmReleaseTarget{t}); err != nil {
		return nil, err
	}
	cl, err := d.Config.Live(ctx)
	if err != nil {
		return nil, err
	}
	return d.run(ctx, cl, &sharedReads{}, t)
}

// RunAll measures targets concurrently, one summary row each, sorted by HelmRelease.
func (d *DiffHelmRelease) RunAll(ctx context.Context, targets []HelmReleaseTarget) (*Summary, error) {
	if err := d.connect(ctx, targets); err != nil {
		return nil, err
	}
	// One read of the cluster for the run: each kind's LIST in each namespace once, whatever
	// the number of HelmReleases there; each namespace's release storage and each source
	// artifact once.
	snap, err := d.Config.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	shared := &sharedReads{}
	// The summary's order, from the start: Measure.Each is given the rows in it.
	targets = slices.Clone(targets)
	sort.SliceStable(targets, func(i, j int) bool { return targets[i].name() < targets[j].name() })
	s := summaries(len(targets), d.Measure, func(i int) (*diff.Report, diff.SummaryRow, string, error) {
		name := targets[i].name()
		res, err := d.run(ctx, snap, shared, targets[i])
		var rep *diff.Report
		if res != nil {
			rep = res.Report
		}
		return rep, diff.SummaryRow{HelmRelease: name, Next: "?", Release: "?", Namespace: "?"}, "HelmRelease " + name, err
	})
	return s, nil
}

// sharedReads are what the HelmReleases of one run read once: each namespace's release
// storage, each source artifact.
type sharedReads struct {
	storage   releaseStorage
	artifacts helmcontroller.Artifacts
}

// run renders t and measures it against cl, with the run's shared reads.
func (d *DiffHelmRelease) run(ctx context.Context, cl diff.Cluster, shared *sharedReads, t HelmReleaseTarget) (*Result, error) {
	hr, err := helmcontroller.Decode(t.Object)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("%s: %w", t.Where, err)}
	}
	name := "HelmRelease " + hr.Namespace + "/" + hr.Name
	var get helmcontroller.Getter = cl
	if t.stream != nil {
		get = t.stream
		// A HelmRelease as written has no status: the one in the cluster says what
		// helm-controller last did, and the file's spec is a new generation of it.
		switch obj, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, hr.Namespace, hr.Name); {
		case err == nil:
			if live, err := helmcontroller.Decode(obj); err == nil {
				hr.Status, hr.Generation = live.Status, live.Generation
				if !equality.Semantic.DeepEqual(live.Spec, hr.Spec) {
					hr.Generation++
				}
			}
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if where := helmcontroller.RemoteCluster(hr); where != "" {
		// Its release, its objects and its lookups are in that cluster, not in this one.
		return nil, fmt.Errorf("%s is installed in another cluster (spec.kubeConfig: %s), whose release and objects diff helmrelease does not read: not compared", name, where)
	}
	proxy, err := d.Config.ServiceProxy()
	if err != nil {
		return nil, err
	}
	id := helmcontroller.IdentityOf(hr)
	// helm-controller acts as the HelmRelease's service account for the whole Helm
	// configuration: its storage, the render's lookup calls, the apply.
	// xref: helm-controller internal/controller/helmrelease_controller.go buildRESTClientGetter.
	account := hr.Spec.ServiceAccountName
	if account == "" {
		account = d.DefaultServiceAccount
	}
	lookup, err := d.impersonation.lookup(ctx, d.Config, hr.Namespace, account)
	if err != nil {
		return nil, err
	}
	conf := d.Config
	if lookup != nil && lookup.Impersonated {
		conf = d.Config.As(lookup.Account)
	}
	cfg, err := shared.storage.helm4(conf, id.Storage)
	if err != nil {
		return nil, err
	}
	var last *release4.Release
	switch r, err := cfg.Releases.Last(id.Name); {
	case errors.Is(err, driver.ErrReleaseNotFound):
	case err != nil:
		return nil, fmt.Errorf("%s: release %s/%s%s: %w", name, id.Storage, id.Name, asWhom(lookup), err)
	default:
		last, _ = r.(*release4.Release)
	}
	if last != nil {
		// An upgrade: its objects are built by neither render (see unbuilt4); buildable
		// makes the one check of theirs that would stop the upgrade.
		cfg.KubeClient = unbuilt4{cfg.KubeClient}
	}
	// Rendered twice, as diff upgrade renders: a field the two renders disagree on (a
	// generated certificate or password) changes on every reconcile that renders.
	b, err := helmcontroller.Build(ctx, hr, helmcontroller.BuildOptions{Get: get, Config: cfg, Last: last, LastKnown: true, Rerender: !d.ManifestOnly,
		Charts: helmcontroller.ChartOptions{Proxy: proxy, PlainHTTP: d.PlainHTTP, Artifacts: &shared.artifacts}})
	var be *helmcontroller.BuildError
	switch {
	case errors.As(err, &be) && be.Stage == helmcontroller.StageRender:
		return nil, fmt.Errorf("%s%s: %w", name, asWhom(lookup), err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r, ch := b.Rendered, b.Chart
	if last != nil {
		if err := d.Config.upgradable(r.Manifest, last.Manifest); err != nil {
			return nil, fmt.Errorf("%s%s: %w", name, asWhom(lookup), err)
		}
	}
	if d.ManifestOnly {
		return &Result{Manifest: r.Manifest}, nil
	}
	next := helmcontroller.NextReconcile(hr, last, r)
	var ignore []flux.IgnoreRule
	if dd := hr.Spec.DriftDetection; dd != nil && len(dd.Ignore) > 0 {
		if ignore, err = flux.IgnoreRules(dd.Ignore); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	policy := helmcontroller.ApplyPolicy(hr, last)
	crds := diff.CRDsUntouched
	if next.Action == flux.NextUpgrade || next.Action == flux.NextInstall {
		crds = diff.CRDPolicy(helmcontroller.CRDPolicy(hr, last))
	}
	in := diff.Input{Release: id.Name, Namespace: id.Namespace, Desired: r.Manifest,
		HelmRelease: hr.Namespace + "/" + hr.Name, HelmReleaseRules: ignore, Next: &next,
		Rendered: true, SameInputs: helmcontroller.SameInputs(hr, last, r),
		Rerender: b.Rerender, CountUnstable: d.CountUnstable,
		CRDs: b.CRDs, CRDPolicy: crds,
		Apply: diff.ApplyClientSide, ForceConflicts: policy.ForceConflicts, ForceReplace: policy.ForceReplace, TakeOwnership: policy.TakeOwnership}
	if policy.ServerSide {
		in.Apply = diff.ApplyServerSide
	}
	if last != nil {
		in.Revision, in.Previous = last.Version, last.Manifest
	}
	rep, err := diff.Run(ctx, cl, d.input(in))
	if err != nil {
		return nil, err
	}
	rep.Engine = "helm-controller's render (the Helm 4 SDK " + ModuleVersion("helm.sh/helm/v4") + ", its post-renderers) of chart " + ch.Name() + "-" + ch.Metadata.Version
	rep.Source, rep.Lookup = r.Source.String(), lookup
	return &Result{Report: rep}, nil
}

// asWhom says, in a render's error, as whom the render asked the cluster: as the HelmRelease's
// account (helm-controller fails the same way: the account lacks a permission the release
// needs), or as the user, and why.
func asWhom(l *diff.Lookup) string {
	switch {
	case l == nil:
		return ""
	case l.Impersonated:
		return " (as " + l.Account + ", as helm-controller would)"
	default:
		return " (as you, not as " + l.Account + ": " + l.Reason + ")"
	}
}
