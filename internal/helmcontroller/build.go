package helmcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	action4 "helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil4 "helm.sh/helm/v4/pkg/chart/v2/util"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-drift/helm-drift/internal/kubeapis"
	"github.com/helm-drift/helm-drift/internal/varying"
)

// BuildOptions are what one HelmRelease's render reads besides the HelmRelease itself. The
// cluster is one of them, and optional: without Config the render asks no API server.
type BuildOptions struct {
	// Get answers the HelmRelease's valuesFrom and its chart's source: a stream's objects, a
	// repository's, the cluster (or a StreamFirst over them).
	Get Getter
	// Chart, when set, is the chart to render (a --chart-dir, a chart of a repository),
	// rather than the one its source holds.
	Chart *chartv2.Chart
	// Charts say how the chart is read from its source (Charts.Get defaults to Get).
	Charts ChartOptions
	// Config, when set, is the cluster: the Helm 4 SDK's configuration with release storage in
	// the release's storage namespace, lookup and capabilities from the API server. Nil
	// renders with no cluster, as helm template does: an in-memory storage (no last release:
	// an install), lookup answered as empty, capabilities from KubeVersion and APIVersions.
	Config *action4.Configuration
	// KubeVersion and APIVersions are the capabilities of a render without Config, as helm
	// template's --kube-version and --api-versions ("": the Helm SDK's default version).
	KubeVersion string
	APIVersions []string
	// Last, with LastKnown, is the release's last revision as the caller read it (nil: none).
	Last      *release4.Release
	LastKnown bool
	// Rerender renders a second time what can render differently (Built.Rerender).
	Rerender bool
	// Upgrade, without Config, says helm-controller upgrades a release of this HelmRelease
	// (else it installs one): the render takes spec.upgrade's settings (RenderOptions.Upgrading).
	// Upgrades, when set, is the render of that release: with spec.upgrade.preserveValues, the
	// values are Helm's --reuse-values over it, the values over its values and the chart's
	// defaults replaced by its chart's coalesced with its values (reuseValues in the Helm SDK's
	// upgrade action). Either way the render is an install's (.Release.IsUpgrade false), as
	// helm template's.
	Upgrade  bool
	Upgrades *Rendered
}

// Built is a HelmRelease rendered as helm-controller would render it now.
type Built struct {
	*Rendered
	// Rerender is a second render of the same inputs (BuildOptions.Rerender; "" otherwise):
	// a field the two disagree on (a generated password) changes on every reconcile that
	// renders.
	Rerender string
	// CRDs are the chart's crds/ (its dependencies' too), as one manifest.
	CRDs string
	// Reused says the values are Helm's --reuse-values over BuildOptions.Upgrades
	// (spec.upgrade.preserveValues).
	Reused bool
	// Reupgrades, with Reused, says the values Helm stores (those --reuse-values merged)
	// differ from those helm-controller composes: it finds the release out of sync on every
	// later reconcile and upgrades it again, each time a new revision with the same objects.
	// xref: helm-controller internal/reconcile/state.go (VerifyRelease: ErrConfigDigest);
	// internal/release/observation.go (ConfigDigest of the release's Config).
	Reupgrades bool
	// Offered are, for a render without a cluster, the API versions it offered beside
	// Kubernetes' own: BuildOptions.APIVersions and those of the CRDs the release's charts
	// install (see withChartCRDs).
	Offered []string
}

// Build renders hr as helm-controller would: its values (spec.values over valuesFrom), its
// chart (BuildOptions.Chart, else from its source), the Helm 4 SDK's install or upgrade with
// helm-controller's settings and post-renderers (see Render); with or without a cluster.
// diff helmrelease, owners --deep and diff tree all render through it.
func Build(ctx context.Context, hr *v2.HelmRelease, o BuildOptions) (*Built, error) {
	vals, err := Values(ctx, o.Get, hr)
	if err != nil {
		return nil, &BuildError{Stage: StageValues, Err: err}
	}
	ch, src := o.Chart, Source{From: "given"}
	if ch == nil {
		co := o.Charts
		if co.Get == nil {
			co.Get = o.Get
		}
		if ch, src, err = LoadChart(ctx, hr, co); err != nil {
			return nil, &BuildError{Stage: StageChart, Err: err}
		}
	}
	ro := RenderOptions{Config: o.Config, Last: o.Last, LastKnown: o.LastKnown}
	var offered []string
	if o.Config == nil {
		ro.Offline, ro.LastKnown, ro.Last = true, true, nil
		ro.Upgrading = o.Upgrade || o.Upgrades != nil
		if ro.KubeVersion, err = kubeVersion(o.KubeVersion); err != nil {
			return nil, &BuildError{Stage: StageRender, Err: err}
		}
		given, err := withChartCRDs(hr, ch, vals, o)
		if err != nil {
			return nil, &BuildError{Stage: StageRender, Err: err}
		}
		// Kubernetes' own API versions as the release serves them, not helm template's fixed
		// set (see kubeapis), then those given.
		if ro.APIVersions, err = kubeapis.Offered(o.KubeVersion, given); err != nil {
			return nil, &BuildError{Stage: StageRender, Err: err}
		}
		offered = given
		ro.Config = action4.NewConfiguration()
		ro.Config.Releases = storage4.Init(driver4.NewMemory())
	} else {
		last, err := lastRelease(o.Config, IdentityOf(hr), o.Last, o.LastKnown)
		if err != nil {
			return nil, &BuildError{Stage: StageRender, Err: err}
		}
		cfg, err := withPendingCRDs(hr, ch, vals, o.Config, last)
		if err != nil {
			return nil, &BuildError{Stage: StageRender, Err: err}
		}
		if cfg != nil {
			ro.Config, ro.Last, ro.LastKnown = cfg, last, true
		}
	}
	composed, reused := vals, o.Config == nil && o.Upgrades != nil && hr.GetUpgrade().PreserveValues
	if reused {
		if ch, vals, err = reuseValues(ch, vals, o.Upgrades); err != nil {
			return nil, &BuildError{Stage: StageValues, Err: err}
		}
	}
	again := deepCopyValues(vals) // the SDK may change the map it is given
	// The values Helm stores: --reuse-values merged; helm-controller compares its composed ones
	// with them on every reconcile.
	reupgrades := reused && ConfigDigest(again) != ConfigDigest(composed)
	r, err := Render(ctx, hr, ch, vals, ro)
	if err != nil {
		return nil, &BuildError{Stage: StageRender, Err: err}
	}
	// What helm-controller stores and compares is the values it composed, not the SDK's.
	r.Source, r.ConfigDigest, r.values = src, ConfigDigest(composed), composed
	b := &Built{Rendered: r, CRDs: ChartCRDs(ch), Reused: reused, Reupgrades: reupgrades, Offered: offered}
	if !o.Rerender {
		return b, nil
	}
	var previous map[string]any
	if ro.Last != nil {
		previous = ro.Last.Config
	}
	b.Rerender, err = varying.Rerender4(ch, r.Manifest, func(c *chartv2.Chart) (string, error) {
		r2, err := Render(ctx, hr, c, deepCopyValues(again), ro)
		if err != nil {
			return "", err
		}
		return r2.Manifest, nil
	}, again, previous)
	if err != nil {
		return nil, &BuildError{Stage: StageRender, Err: err}
	}
	return b, nil
}

// withChartCRDs are the API versions a render without a cluster offers beside Kubernetes' own:
// o.APIVersions, and those the CRDs of the chart's crds/ serve when helm-controller applies
// them before it renders (its crds policy for this install or upgrade is not Skip; the
// dependencies vals disables left out, as it leaves them out), and for an upgrade those of
// the upgraded release's chart, which the cluster holds since that release. helm-controller's
// render asks the cluster's discovery after applying them, so a chart that renders its custom
// resources only when .Capabilities.APIVersions has their CRD's version renders them.
// xref: helm-controller internal/action/crds.go applyCRDs (ProcessDependencies, then
// CRDObjects); install.go Install, upgrade.go Upgrade (applyCRDs before the SDK's action);
// helm.sh/helm/v4 pkg/action/action.go getCapabilities (discovery, after).
func withChartCRDs(hr *v2.HelmRelease, ch *chartv2.Chart, vals map[string]any, o BuildOptions) ([]string, error) {
	given := slices.Clone(o.APIVersions)
	upgrade := o.Upgrade || o.Upgrades != nil
	if len(ch.CRDObjects()) > 0 && crdPolicy(hr, upgrade) != string(v2.Skip) {
		if err := chartutil4.ProcessDependencies(ch, vals); err != nil {
			return nil, fmt.Errorf("chart %s: dependencies: %w", ch.Name(), err)
		}
		given = append(given, chartCRDServes(ch)...)
	}
	if o.Upgrades != nil && o.Upgrades.Chart != nil {
		given = append(given, chartCRDServes(o.Upgrades.Chart)...)
	}
	return given, nil
}

// chartCRDServes are the API versions the CRDs of ch's crds/ directories serve (those of its
// dependencies still in it too).
func chartCRDServes(ch *chartv2.Chart) []string {
	var out []string
	for _, c := range ch.CRDObjects() {
		out = append(out, kubeapis.CRDServesIn(c.File.Data)...)
	}
	return out
}

// reuseValues is what the Helm SDK's upgrade does with ReuseValues (helm-controller's
// spec.upgrade.preserveValues): the values vals over the previous release's, and the chart ch
// with its defaults replaced by the previous chart's coalesced with the previous values. ch
// is copied, not changed.
// xref: helm.sh/helm/v4 pkg/action/upgrade.go (*Upgrade).reuseValues.
func reuseValues(ch *chartv2.Chart, vals map[string]any, prev *Rendered) (*chartv2.Chart, map[string]any, error) {
	old, err := util.CoalesceValues(prev.Chart, deepCopyValues(prev.values))
	if err != nil {
		return nil, nil, fmt.Errorf("upgrade.preserveValues: rebuild the values of chart %s %s: %w", prev.Chart.Name(), prev.Chart.Metadata.Version, err)
	}
	c := *ch
	c.Values = old
	return &c, util.CoalesceTables(deepCopyValues(vals), deepCopyValues(prev.values)), nil
}

// The stages of a build, for BuildError.
const (
	// StageValues: composing the values (a valuesFrom source missing or unreadable).
	StageValues = "values"
	// StageChart: reading the chart from its source.
	StageChart = "chart"
	// StageRender: the chart's render itself (its templates, its schema, its post-renderers,
	// and with a cluster the answers to lookup).
	StageRender = "render"
)

// BuildError is an error of one stage of a build: the caller says what to do about each (a
// chart that cannot be read may be given locally; a render that failed as the HelmRelease's
// account says so).
type BuildError struct {
	Stage string
	Err   error
}

// Error is the stage's error.
func (e *BuildError) Error() string { return e.Err.Error() }

// Unwrap returns the stage's error.
func (e *BuildError) Unwrap() error { return e.Err }

// kubeVersion parses a --kube-version ("": nil, the SDK's default).
func kubeVersion(v string) (*common.KubeVersion, error) {
	if v == "" {
		return nil, nil
	}
	kv, err := common.ParseKubeVersion(v)
	if err != nil {
		return nil, fmt.Errorf("--kube-version %q: %w (want e.g. v1.34.2)", v, err)
	}
	return kv, nil
}

// ChartCRDs are the CRDs of the chart's crds/ directories (its dependencies' too), as one
// manifest.
func ChartCRDs(ch *chartv2.Chart) string {
	var b strings.Builder
	for _, c := range ch.CRDObjects() {
		WriteCRD(&b, c.Filename, c.File.Data)
	}
	return b.String()
}

// WriteCRD writes one file of a chart's crds/ to b as a manifest document, headed by its
// Source line as Helm heads a template's.
func WriteCRD(b *strings.Builder, filename string, data []byte) {
	fmt.Fprintf(b, "---\n# Source: %s\n%s\n", filename, strings.TrimSpace(string(data)))
}

// deepCopyValues copies a values tree of maps and lists (the Helm SDK may change the map it
// is given).
func deepCopyValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopyValues(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopyValue(x)
		}
		return out
	}
	return v
}
