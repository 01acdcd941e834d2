package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	action4 "helm.sh/helm/v4/pkg/action"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxrelease"
	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
)

// hrTarget is one HelmRelease to diff: from the cluster, or as written in a file (with the
// file's other objects to read its sources and values from first).
type hrTarget struct {
	obj    map[string]any
	where  string // "HelmRelease apps/web" or "hr.yaml: document 2"
	stream *fluxrelease.StreamFirst
}

// diffHelmRelease renders a HelmRelease as helm-controller would and measures the render
// against the cluster, with its next reconcile's predictions.
func (o *diffOptions) diffHelmRelease(ctx context.Context, cl *live.Client, t hrTarget, rules []flux.IgnoreRule) (*diff.Report, error) {
	hr, err := fluxrelease.Decode(t.obj)
	if err != nil {
		return nil, &action.InputError{Err: fmt.Errorf("%s: %w", t.where, err)}
	}
	name := "HelmRelease " + hr.Namespace + "/" + hr.Name
	var get fluxrelease.Getter = cl
	if t.stream != nil {
		get = t.stream
		// A HelmRelease as written has no status: the one in the cluster says what
		// helm-controller last did, and the file's spec is a new generation of it.
		switch obj, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, hr.Namespace, hr.Name); {
		case err == nil:
			if live, err := fluxrelease.Decode(obj); err == nil {
				hr.Status, hr.Generation = live.Status, live.Generation
				if !equality.Semantic.DeepEqual(live.Spec, hr.Spec) {
					hr.Generation++
				}
			}
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	vals, err := fluxrelease.Values(ctx, get, hr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	proxy, err := o.cfg.ServiceProxy()
	if err != nil {
		return nil, err
	}
	ch, src, err := fluxrelease.LoadChart(ctx, hr, fluxrelease.ChartOptions{Get: get, Proxy: proxy, PlainHTTP: o.registry.PlainHTTP})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	id := fluxrelease.IdentityOf(hr)
	cfg, err := o.helmConfiguration4At(id.Storage)
	if err != nil {
		return nil, err
	}
	var last *release4.Release
	switch r, err := cfg.Releases.Last(id.Name); {
	case errors.Is(err, driver.ErrReleaseNotFound):
	case err != nil:
		return nil, fmt.Errorf("%s: release %s/%s: %w", name, id.Storage, id.Name, err)
	default:
		last, _ = r.(*release4.Release)
	}
	r, err := fluxrelease.Render(ctx, hr, ch, vals, fluxrelease.RenderOptions{Config: cfg, Last: last, LastKnown: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.Source = src
	if o.output == outputManifest {
		return nil, writeManifest(o.manifestOut, r.Manifest)
	}
	next := fluxrelease.NextReconcile(hr, last, r)
	ignore, err := ignoreOf(hr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	in := diff.Input{Release: id.Name, Namespace: id.Namespace, Desired: r.Manifest,
		Engine:      "helm-controller's render (the Helm 4 SDK " + moduleVersion("helm.sh/helm/v4") + ", its post-renderers) of chart " + ch.Name() + "-" + ch.Metadata.Version,
		Source:      src.String(),
		HelmRelease: hr.Namespace + "/" + hr.Name, HelmReleaseRules: ignore,
		Next: &next,
		// helm-controller upgrades with server-side apply and forces conflicts, unless the
		// HelmRelease turns server-side apply off.
		Apply: diff.ApplyServerSide, ForceConflicts: true, TakeOwnership: !hr.GetUpgrade().DisableTakeOwnership,
		Rules: rules, Normalize: o.normalize, Workers: o.workers}
	if ssa := hr.GetUpgrade().ServerSideApply; ssa == v2.ServerSideApplyDisabled {
		in.Apply, in.ForceConflicts = diff.ApplyClientSide, false
	}
	if last == nil {
		in.TakeOwnership = !hr.GetInstall().DisableTakeOwnership
	} else {
		in.Revision, in.Previous = last.Version, last.Manifest
		if hr.GetUpgrade().ServerSideApply == "" || hr.GetUpgrade().ServerSideApply == v2.ServerSideApplyAuto {
			if last.ApplyMethod != "ssa" {
				in.Apply, in.ForceConflicts = diff.ApplyClientSide, false
			}
		}
	}
	return diff.Run(ctx, cl, in)
}

// ignoreOf is the HelmRelease's spec.driftDetection.ignore.
func ignoreOf(hr *v2.HelmRelease) ([]flux.IgnoreRule, error) {
	if hr.Spec.DriftDetection == nil || len(hr.Spec.DriftDetection.Ignore) == 0 {
		return nil, nil
	}
	return flux.IgnoreRules(hr.Spec.DriftDetection.Ignore)
}

// helmConfiguration4At is the Helm 4 SDK's action configuration with storage in namespace,
// over the run's one configuration.
func (o *diffOptions) helmConfiguration4At(namespace string) (*action4.Configuration, error) {
	return o.cfg.Helm4(namespace)
}

// hrTargets reads the HelmReleases to diff: NAME or NS/NAME from the cluster, or every
// HelmRelease of the --file streams (- for stdin).
func (o *diffOptions) hrTargets(ctx context.Context, cl *live.Client, arg string, in io.Reader) ([]hrTarget, error) {
	if len(o.files) == 0 {
		ns, name := o.namespace, arg
		if a, b, ok := strings.Cut(arg, "/"); ok {
			ns, name = a, b
		}
		obj, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, ns, name)
		if apierrors.IsNotFound(err) {
			return nil, &action.InputError{Err: fmt.Errorf("no HelmRelease %s/%s (helm.toolkit.fluxcd.io/v2): check the name and -n, or diff one as written with --file", ns, name)}
		}
		if err != nil {
			return nil, fmt.Errorf("HelmRelease %s/%s: %w", ns, name, err)
		}
		return []hrTarget{{obj: obj, where: "HelmRelease " + ns + "/" + name}}, nil
	}
	sg := &fluxrelease.StreamFirst{}
	var targets []hrTarget
	for _, f := range o.files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(in)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, &action.InputError{Err: fmt.Errorf("--file %s: %w", f, err)}
		}
		st, err := manifest.Split(data)
		if err != nil {
			return nil, &action.InputError{Err: fmt.Errorf("--file %s: %w", f, err)}
		}
		objs, err := owners.Objects(st)
		if err != nil {
			return nil, &action.InputError{Err: fmt.Errorf("--file %s: %w", f, err)}
		}
		for _, ob := range objs {
			m, err := ob.Decode()
			if err != nil {
				return nil, &action.InputError{Err: fmt.Errorf("--file %s: %s: %w", f, ob.Where(), err)}
			}
			ns := ob.Namespace
			if ns == "" {
				ns = o.namespace
				md, _ := m["metadata"].(map[string]any)
				md["namespace"] = ns
			}
			sg.Add(ob.Group(), ob.Kind, ns, ob.Name, func() (map[string]any, error) { return m, nil })
			if ob.Kind == "HelmRelease" && ob.Group() == flux.HelmReleaseGroup {
				targets = append(targets, hrTarget{obj: m, where: f + ": " + ob.Where(), stream: sg})
			}
		}
	}
	if arg != "" {
		var only []hrTarget
		for _, t := range targets {
			md, _ := t.obj["metadata"].(map[string]any)
			if n, _ := md["name"].(string); n == arg || md["namespace"].(string)+"/"+n == arg {
				only = append(only, t)
			}
		}
		if len(only) == 0 {
			return nil, &action.InputError{Err: fmt.Errorf("--file: no HelmRelease %s in %s", arg, strings.Join(o.files, ", "))}
		}
		targets = only
	}
	if len(targets) == 0 {
		return nil, &action.InputError{Err: fmt.Errorf("--file %s: no HelmRelease (helm.toolkit.fluxcd.io/v2) in it", strings.Join(o.files, ", "))}
	}
	return targets, nil
}

// runHelmReleases diffs several HelmReleases (--all, or a --file with more than one), one
// summary row each.
func (o *diffOptions) runHelmReleases(ctx context.Context, cl *live.Client, targets []hrTarget, rules []flux.IgnoreRule, out, errOut io.Writer) int {
	rows, unmeasured := o.summaries(len(targets), func(i int) (*diff.Report, diff.SummaryRow, string, error) {
		md, _ := targets[i].obj["metadata"].(map[string]any)
		hrName := fmt.Sprint(md["namespace"]) + "/" + fmt.Sprint(md["name"])
		rep, err := o.diffHelmRelease(ctx, cl, targets[i], rules)
		return rep, diff.SummaryRow{HelmRelease: hrName, Next: "?", Release: "?", Namespace: "?"}, "HelmRelease " + hrName, err
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].HelmRelease < rows[j].HelmRelease })
	return o.writeSummary(rows, unmeasured, func(r diff.SummaryRow) string { return "HelmRelease " + r.HelmRelease }, out, errOut)
}

// allHelmReleases lists the HelmReleases of the namespace (every namespace with -A).
func (o *diffOptions) allHelmReleases(ctx context.Context, cl *live.Client) ([]hrTarget, error) {
	ns := o.namespace
	if o.allNamespaces {
		ns = ""
	}
	objs, err := cl.ListObjects(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, ns)
	if err != nil {
		return nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	targets := make([]hrTarget, 0, len(objs))
	for _, m := range objs {
		md, _ := m["metadata"].(map[string]any)
		targets = append(targets, hrTarget{obj: m, where: fmt.Sprintf("HelmRelease %v/%v", md["namespace"], md["name"])})
	}
	return targets, nil
}
