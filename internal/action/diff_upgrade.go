package action

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	action4 "helm.sh/helm/v4/pkg/action"
	release4 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// The Helm SDKs DiffUpgrade renders with.
const (
	// EngineAuto: the SDK of the Helm that wrote the release.
	EngineAuto = "auto"
	// EngineHelm3 and EngineHelm4 name an SDK.
	EngineHelm3 = "helm3"
	EngineHelm4 = "helm4"
)

// Engine is the Helm SDK chosen to render an upgrade, and why.
type Engine struct {
	Name, Why string
}

// String reads "the Helm 4 SDK v4.3.1 (the release was written by Helm 4: apply method ssa)".
func (e Engine) String() string {
	sdk := map[string]string{EngineHelm3: "the Helm 3 SDK " + ModuleVersion("helm.sh/helm/v3"), EngineHelm4: "the Helm 4 SDK " + ModuleVersion("helm.sh/helm/v4")}[e.Name]
	return sdk + " (" + e.Why + ")"
}

// ModuleVersion is the version of a module this binary was built with.
func ModuleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

// The apply methods DiffUpgrade.ServerSide takes.
const (
	ServerSideAuto  = "auto"
	ServerSideTrue  = "true"
	ServerSideFalse = "false"
)

// DiffUpgrade compares what "helm upgrade RELEASE CHART" with the same flags would install
// with the cluster: a dry-run of the Helm SDK's upgrade action, twice (what differs between
// the two renders is unstable), with the SDK of the Helm that wrote the release.
type DiffUpgrade struct {
	Config *Configuration
	Measure
	// Spec is what helm upgrade is asked; Spec.Install is set here when the release does not
	// exist and Install allows its install.
	Spec UpgradeSpec
	// Install: as helm upgrade --install.
	Install bool
	// Engine is EngineAuto, EngineHelm3 or EngineHelm4.
	Engine string
	// ServerSide is Helm 4's apply method: ServerSideAuto (as the release was written),
	// ServerSideTrue or ServerSideFalse.
	ServerSide string
	// ForceConflicts, Force and TakeOwnership: as helm upgrade's flags; the predictions follow.
	ForceConflicts, Force, TakeOwnership bool
	// CountUnstable counts as drift the fields on which the two renders disagree.
	CountUnstable bool
	// SkipCRDs leaves the chart's crds/ out, as helm upgrade --skip-crds (an install creates
	// none of them; an upgrade never touches them).
	SkipCRDs bool
	// ManifestOnly renders and measures nothing: Result.Manifest only.
	ManifestOnly bool
}

// Result is a diff verb's outcome for one release: the report, or with ManifestOnly the
// manifest it would have measured (a measured run does not keep the manifest: it is the
// largest thing a run holds besides the live objects).
type Result struct {
	Report   *diff.Report
	Manifest string
}

// Run renders the upgrade of the release and measures it.
func (d *DiffUpgrade) Run(ctx context.Context) (*Result, error) {
	name, ns := d.Spec.Release, d.Spec.Namespace
	// The release's records are decoded once for each SDK, whichever of the reads below and
	// of the renders asks first.
	reads := &releaseReads{}
	cfg, err := d.Config.helm3(ns, reads)
	if err != nil {
		return nil, err
	}
	// Which Helm wrote the release is read beside the release itself.
	var (
		chosen    Engine
		chooseErr error
		choosing  sync.WaitGroup
	)
	choosing.Go(func() { chosen, chooseErr = d.chooseEngine(reads) })
	last, err := helmaction.NewGet(cfg).Run(name)
	choosing.Wait()
	spec := d.Spec
	var eng Engine
	switch {
	case err != nil && d.Install && errors.Is(err, driver.ErrReleaseNotFound):
		// helm upgrade --install of a release that does not exist: its install.
		spec.Install, last = true, &release.Release{Name: name, Namespace: ns}
		eng = Engine{EngineHelm3, "an install: the Helm 3 CLI's default; --engine helm4 for Helm 4's"}
		if d.Engine == EngineHelm4 || d.ServerSide == ServerSideTrue {
			eng = Engine{EngineHelm4, "an install with --engine helm4 or --server-side true"}
		}
	case err != nil:
		return nil, ReleaseError(ns, name, err)
	case chooseErr != nil:
		return nil, chooseErr
	default:
		eng = chosen
	}
	// One read of the cluster for the run: a chart's CRD is read once, for itself and for the
	// schema of its kind's objects.
	snap, err := d.Config.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	// tpl may be given the values the release was last installed with (--reuse-values); the
	// decoded records (a chart each) are held for the render only, not through the measurement.
	r, err := d.Config.renderUpgradeOf(ctx, eng.Name, spec, stored{previous: last.Config, reads: reads})
	if err != nil {
		return nil, err
	}
	if !spec.Install {
		if err := d.Config.upgradable(r.Manifest, last.Manifest); err != nil {
			return nil, &InputError{fmt.Errorf("rendering the upgrade of %s/%s: %w", ns, name, err)}
		}
	}
	if d.ManifestOnly {
		return &Result{Manifest: r.Manifest}, nil
	}
	if r.Offline {
		eng.Why += "; the chart's crds/ kinds are not served yet, so the install was rendered without the cluster, as helm template renders: lookup answered nothing"
	}
	crds := r.CRDs
	if d.SkipCRDs {
		crds = ""
	}
	rep, err := diff.Run(ctx, snap, d.input(diff.Input{Release: last.Name, Namespace: last.Namespace, Revision: last.Version,
		Desired: r.Manifest, Previous: last.Manifest, Rerender: r.Again, CountUnstable: d.CountUnstable,
		Rendered: true, SameInputs: !spec.Install && r.Inputs != "" && r.Inputs == inputs3(last.Chart, last.Config).digest(),
		CRDs: crds, CRDPolicy: crdPolicy(spec.Install),
		Apply: d.apply(), ForceConflicts: d.ForceConflicts, ForceReplace: d.Force, TakeOwnership: d.TakeOwnership}))
	if err != nil {
		return nil, err
	}
	rep.Engine = eng.String()
	return &Result{Report: rep}, nil
}

// chooseEngine picks the SDK of the Helm that wrote the release's latest revision: Helm 4
// records in the release how it applied it (apply_method), Helm 3 records nothing. Engine
// overrides the choice.
func (d *DiffUpgrade) chooseEngine(reads *releaseReads) (Engine, error) {
	switch d.Engine {
	case EngineHelm3, EngineHelm4:
		return Engine{d.Engine, "--engine " + d.Engine}, nil
	}
	cfg, err := d.Config.helm4(d.Spec.Namespace, reads)
	if err != nil {
		return Engine{}, err
	}
	r, err := action4.NewGet(cfg).Run(d.Spec.Release)
	if err != nil {
		return Engine{}, ReleaseError(d.Spec.Namespace, d.Spec.Release, err)
	}
	rel, ok := r.(*release4.Release)
	if ok && rel.ApplyMethod != "" {
		return Engine{EngineHelm4, "the release was written by Helm 4: apply method " + rel.ApplyMethod}, nil
	}
	return Engine{EngineHelm3, "the release was written by Helm 3"}, nil
}

// apply maps ServerSide onto how the upgrade writes the objects ("" for as written).
func (d *DiffUpgrade) apply() diff.Apply {
	switch d.ServerSide {
	case ServerSideTrue:
		return diff.ApplyServerSide
	case ServerSideFalse:
		return diff.ApplyClientSide
	}
	return ""
}

// crdPolicy is how helm treats crds/: install creates them, upgrade never touches them.
func crdPolicy(install bool) diff.CRDPolicy {
	if install {
		return diff.CRDsHelmInstall
	}
	return diff.CRDsHelmUpgrade
}
