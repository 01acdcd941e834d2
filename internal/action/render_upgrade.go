package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/cli/values"
	kube3 "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	kube4 "helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/varying"
)

// UpgradeSpec is what "helm upgrade RELEASE CHART" is asked: every flag that changes what it
// renders, as either Helm SDK takes it.
type UpgradeSpec struct {
	Release, Namespace string
	// Chart is the chart reference, as helm upgrade takes it.
	Chart string
	// Install renders the install of a release that does not exist (helm upgrade --install).
	Install bool
	// Values are the values flags (-f, --set, ...).
	Values values.Options
	// Version, Repo and Devel locate the chart.
	Version, Repo string
	Devel         bool
	// Registry reaches the chart's registry or repository.
	Registry Registry
	// Verify checks the chart's provenance against Keyring.
	Verify  bool
	Keyring string
	// Lookup answers the chart's lookup from the cluster (a server dry run); else nothing.
	Lookup               bool
	EnableDNS            bool
	SkipSchemaValidation bool
	// ReuseValues, ResetValues and ResetThenReuseValues are helm upgrade's.
	ReuseValues, ResetValues, ResetThenReuseValues bool
	// DependencyUpdate fetches dependencies missing from charts/, as helm upgrade
	// --dependency-update; without it a missing one fails, as helm upgrade fails.
	DependencyUpdate bool
	// PostRenderer, when set, post-renders both renders (ResolvePostRenderer).
	PostRenderer postrender.PostRenderer
	// Kubeconfig and KubeContext are the Helm settings' (the chart and registry lookups).
	Kubeconfig, KubeContext string
	// Log receives what the registry and the dependency update print.
	Log io.Writer
	// KubeVersion and APIVersions are the capabilities of a render with no cluster, as helm
	// template takes them (--kube-version, --api-versions); empty: the SDK's defaults.
	KubeVersion string
	APIVersions []string
}

// upgradeSDK is one Helm SDK's side of the upgrade render; renderUpgrade calls it in order.
type upgradeSDK interface {
	// locate finds the chart and returns its local path.
	locate(chart string) (string, error)
	// load reads the chart at path.
	load(path string) error
	// missingDependencies says which dependencies are missing from charts/ (nil: none).
	missingDependencies() error
	// updateDependencies fetches them into the chart directory, as helm does.
	updateDependencies(path string) error
	// renderedOffline reports whether an install had to be rendered without the cluster (its
	// crds/ kinds are not served yet).
	renderedOffline() bool
	// crds returns the CRDs of the chart's crds/ directories (its dependencies' too), as one
	// manifest.
	crds() string
	// variance reads the loaded chart's templates (see package varying); ok is false for a chart
	// it cannot read.
	variance() (a varying.Analysis, ok bool)
	// keep leaves in the loaded chart only the templates named.
	keep(names map[string]bool)
	// render renders the upgrade (or install) once, its values merged afresh, and returns the
	// manifest and the render's inputs (the caller digests them where it compares them).
	render(ctx context.Context) (string, renderInputs, error)
}

// Render is the upgrade rendered twice: what differs between Manifest and Again is unstable.
// Inputs is the digest of the render's chart and user-supplied values (see renderInputs).
type Render struct {
	Manifest, Again, Inputs string
	// CRDs are the chart's crds/ CRDs, which Helm creates on install and never upgrades.
	CRDs string
	// Offline: an install rendered without the cluster, its crds/ kinds not served yet (lookup
	// answered nothing).
	Offline bool
}

// RenderUpgrade renders what the upgrade would install twice with the Helm SDK engine
// ("helm3" or "helm4"), as a dry run that still talks to the cluster for lookup, as the real
// upgrade would: what differs between the two renders is unstable. The cluster is an option:
// with no configuration (c nil, no kubeconfig read) it renders the install (spec.Install) as
// helm template renders it, each SDK's client-only install: lookup answered as empty, the
// capabilities spec.KubeVersion and spec.APIVersions or the SDK's defaults, the release kept
// in memory. An upgrade (of a release the cluster stores) or lookup needs the cluster.
func (c *Configuration) RenderUpgrade(ctx context.Context, engine string, spec UpgradeSpec) (*Render, error) {
	if c == nil && !spec.Install {
		return nil, &InputError{fmt.Errorf("the upgrade of %s/%s renders against the release the cluster stores: give a cluster, or render its install", spec.Namespace, spec.Release)}
	}
	if c == nil && spec.Lookup {
		return nil, &InputError{errors.New("lookup reads the cluster: with no cluster it is answered as empty, as helm template answers it")}
	}
	return c.renderUpgradeOf(ctx, engine, spec, stored{})
}

// stored is what a render of an upgrade may take from the release it upgrades.
type stored struct {
	// previous are the values the release was last installed or upgraded with: texts tpl may
	// be given (--reuse-values).
	previous map[string]any
	// reads answers the renders' reads of the release's storage (DiffUpgrade.Run shares them
	// with its own); nil: the storage does.
	reads *releaseReads
}

// renderUpgradeOf is RenderUpgrade of a release whose stored records st holds.
func (c *Configuration) renderUpgradeOf(ctx context.Context, engine string, spec UpgradeSpec, st stored) (*Render, error) {
	newSDK := func() (upgradeSDK, error) {
		if engine == "helm4" {
			return c.upgrade4(spec, st)
		}
		return c.upgrade3(spec, st)
	}
	sdk, err := newSDK()
	if err != nil {
		return nil, err
	}
	return renderUpgrade(ctx, sdk, newSDK, spec)
}

// unbuilt3 and unbuilt4 are the Helm SDKs' kube clients for both renders of an upgrade, which
// build no objects. On a dry run the SDK builds the new manifest's objects three times (to
// validate it, and with the stored manifest's to find the objects to adopt) and GETs each new
// one, only to refuse the upgrade: a kind the cluster does not serve (the one refusal left
// with TakeOwnership, which the renders set: whether Helm would adopt an object is the
// report's to say). buildable makes that check from the manifests for a fraction of the cost;
// on a 1,000-object release the builds were the largest part of a render's memory, and on a
// chart with large CRDs a fifth of its time. An install is left as it is: whether its crds/
// kinds are served decides how it renders (see upgrade3.render).
type (
	unbuilt3 struct{ kube3.Interface }
	unbuilt4 struct{ kube4.Interface }
)

// Build builds nothing.
func (unbuilt3) Build(io.Reader, bool) (kube3.ResourceList, error) { return nil, nil }

// Build builds nothing.
func (unbuilt4) Build(io.Reader, bool) (kube4.ResourceList, error) { return nil, nil }

// renderUpgrade is the flow both SDKs share: locate and load the chart, check its
// dependencies as helm upgrade does (fetch them with DependencyUpdate), render twice.
// xref: Helm v3 cmd/helm/upgrade.go, Helm v4 pkg/cmd/upgrade.go (CheckDependencies,
// downloader.Manager.Update).
//
// The two renders run at the same time, the second on the SDK side twin makes: the
// Helm SDKs change the chart they render (its dependencies, processed against the values) and
// their action's configuration, so the second render has its own, the chart loaded again from
// the path the first located (no second download or dependency update).
func renderUpgrade(ctx context.Context, sdk upgradeSDK, twin func() (upgradeSDK, error), spec UpgradeSpec) (*Render, error) {
	path, err := sdk.locate(spec.Chart)
	if err != nil {
		return nil, &InputError{fmt.Errorf("chart %s: %w", spec.Chart, err)}
	}
	if err := sdk.load(path); err != nil {
		return nil, &InputError{fmt.Errorf("chart %s: %w", spec.Chart, err)}
	}
	if err := sdk.missingDependencies(); err != nil {
		if !spec.DependencyUpdate {
			return nil, &InputError{fmt.Errorf("chart %s: %w (helm upgrade fails the same way; add --dependency-update, or run helm dependency build)", spec.Chart, err)}
		}
		if err := sdk.updateDependencies(path); err != nil {
			return nil, &InputError{fmt.Errorf("chart %s: --dependency-update: %w", spec.Chart, err)}
		}
		if err := sdk.load(path); err != nil {
			return nil, &InputError{fmt.Errorf("chart %s: reloading it after --dependency-update: %w", spec.Chart, err)}
		}
	}
	r := &Render{}
	second, err := twin()
	if err != nil {
		return nil, err
	}
	var (
		again      error
		twinned    string
		rerendered map[string]string // nil: the twin renders every template
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		// The twin loads its own copy of the chart (the SDKs change the chart they render)
		// while the first render runs, and renders again only what can render differently.
		if again = second.load(path); again != nil {
			again = &InputError{fmt.Errorf("chart %s: %w", spec.Chart, again)}
			return
		}
		if spec.PostRenderer == nil { // a post-renderer is given the whole manifest
			if a, ok := second.variance(); ok && !a.All {
				if len(a.Rerender) == 0 {
					rerendered = a.Rerender
					return
				}
				second.keep(a.Keep)
				if twinned, _, again = second.render(ctx); again == nil {
					rerendered = a.Rerender
					return
				}
				// Not expected: render the whole chart again, as without the analysis.
				if again = second.load(path); again != nil {
					again = &InputError{fmt.Errorf("chart %s: %w", spec.Chart, again)}
					return
				}
			}
		}
		twinned, _, again = second.render(ctx)
	})
	var inputs renderInputs
	r.Manifest, inputs, err = sdk.render(ctx)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	r.Again = twinned
	if rerendered != nil {
		r.Again = r.Manifest
		if len(rerendered) > 0 {
			r.Again = varying.Splice(r.Manifest, twinned, rerendered)
		}
	}
	r.Inputs = inputs.digest()
	// The chart's crds/ as the render left it: the SDK drops the dependencies a condition or
	// tag disables, and helm install installs the crds/ of those that are left.
	r.CRDs = sdk.crds()
	if again != nil {
		return nil, again
	}
	r.Offline = sdk.renderedOffline()
	return r, nil
}

// crdsNotServed tells the dry-run failure of an install whose custom resources' kinds are not
// served yet ("resource mapping not found ... ensure CRDs are installed first").
func crdsNotServed(err error) bool {
	return strings.Contains(err.Error(), "resource mapping not found") || strings.Contains(err.Error(), "ensure CRDs are installed first")
}

// upgradable makes, on an upgrade's render and the stored manifest, the checks of the real
// upgrade's builds, which the renders' SDKs no longer make (see unbuilt3), in Helm's order:
// the new manifest, then the stored one.
func (c *Configuration) upgradable(render, stored string) error {
	if err := c.buildable(render, "new"); err != nil {
		return err
	}
	return c.buildable(stored, "current")
}

// buildable checks what the Helm SDK's build of a manifest's objects checks on a real upgrade
// (which stops it): that the cluster serves the kind of every object. which is "new" (the
// render, which Helm validates first and reports bare) or "current" (the stored manifest:
// "unable to build kubernetes objects from current release manifest: ...").
// xref: Helm v3 pkg/action/upgrade.go performUpgrade, Helm v4 the same; cli-runtime
// resource.Builder (mappingFor).
func (c *Configuration) buildable(text, which string) error {
	wrap := func(err error) error {
		if which == "new" {
			return err
		}
		return fmt.Errorf("unable to build kubernetes objects from %s release manifest: %w", which, err)
	}
	st, err := manifest.Split([]byte(text))
	if err != nil {
		return wrap(err)
	}
	objs, err := manifest.Objects(st)
	if err != nil {
		return wrap(err)
	}
	served := map[schema.GroupVersionKind]error{}
	for _, o := range objs {
		if o.Hook {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
		err, seen := served[gvk]
		if !seen {
			_, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			served[gvk] = err
		}
		switch {
		case err == nil:
		case meta.IsNoMatchError(err):
			return wrap(fmt.Errorf("resource mapping not found for name: %q namespace: %q from \"\": no matches for kind %q in version %q; ensure CRDs are installed first",
				o.Name, o.Namespace, o.Kind, o.APIVersion))
		default:
			return wrap(fmt.Errorf("%s %s: %w", o.Kind, o.Name, err))
		}
	}
	return nil
}
