package helmcontroller

import (
	"context"
	"fmt"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	action4 "helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	release4 "helm.sh/helm/v4/pkg/release/v1"
)

// Rendered is what helm-controller would write for a HelmRelease now.
type Rendered struct {
	Identity
	// Chart is the chart rendered, its version as helm-controller rewrites it.
	Chart *chartv2.Chart
	// Source says where the chart came from.
	Source Source
	// ConfigDigest is the digest of the composed values (see ConfigDigest).
	ConfigDigest string
	// Manifest is the release manifest (crds/ excluded: helm-controller applies those by its
	// CRD policy, outside the release).
	Manifest string
	// Revision is the revision the action would write; Upgrade says whether it is an upgrade
	// of an existing release (else an install).
	Revision int
	Upgrade  bool
	// values are the composed values: handed to the chart, never printed.
	values map[string]any
}

// RenderOptions say how to render.
type RenderOptions struct {
	// Config is the Helm 4 SDK's action configuration: storage in the release's storage
	// namespace (Identity.Storage), cluster access for lookup and capabilities.
	Config *action4.Configuration
	// Offline renders without asking the cluster (lookup answers nothing), with the
	// capabilities KubeVersion (nil: the SDK's default) and APIVersions, as helm template.
	Offline     bool
	KubeVersion *common.KubeVersion
	APIVersions []string
	// Upgrading, offline, says the render stands for an upgrade of the release: the install
	// action still renders it (.Release.IsUpgrade false, as helm template), with spec.upgrade's
	// settings (schema validation, hooks, ownership) rather than spec.install's.
	Upgrading bool
	// Last, with LastKnown, is the release's last revision as the caller read it (nil: none),
	// so that Render does not read the storage again.
	Last      *release4.Release
	LastKnown bool
}

// Render renders the chart with the values the way helm-controller's next install or
// upgrade would: the Helm 4 SDK's install (no release yet) or upgrade action, as a dry run
// that answers lookup from the cluster, with helm-controller's settings for the HelmRelease:
// reset values (reuse only with upgrade.preserveValues), devel versions, crds/ skipped, hooks
// and schema validation as spec.install/upgrade say, its post-renderers and post-render
// strategy. One setting differs: the objects are not validated against the cluster's OpenAPI
// schema (spec.install/upgrade.disableOpenAPIValidation), which changes no byte of the render
// and took two thirds of its time (the schema is fetched and parsed for every release); an
// object the API server would refuse shows in the diff (and fails its dry-run with --normalize
// server).
// xref: helm-controller internal/action/install.go newInstall; upgrade.go newUpgrade;
// post_render.go toHelmPostRenderStrategy (Helm 4 defaults: combined).
func Render(ctx context.Context, hr *v2.HelmRelease, ch *chartv2.Chart, vals map[string]any, o RenderOptions) (*Rendered, error) {
	id := IdentityOf(hr)
	strategy := action4.PostRenderStrategyCombined
	if s := hr.GetPostRenderStrategy(); s != "" {
		strategy = action4.PostRenderStrategy(s)
	}
	dry := action4.DryRunServer
	if o.Offline {
		dry = action4.DryRunClient
	}
	r, err := lastRelease(o.Config, id, o.Last, o.LastKnown)
	if err != nil {
		return nil, err
	}
	var res any
	upgrade := false
	if r != nil {
		upgrade = true
		up := action4.NewUpgrade(o.Config)
		up.Namespace = id.Namespace
		up.DryRunStrategy = dry
		up.ResetValues = !hr.GetUpgrade().PreserveValues
		up.ReuseValues = hr.GetUpgrade().PreserveValues
		up.TakeOwnership = !hr.GetUpgrade().DisableTakeOwnership
		up.DisableHooks = hr.GetUpgrade().DisableHooks
		up.DisableOpenAPIValidation = true // see Render
		up.SkipSchemaValidation = hr.GetUpgrade().DisableSchemaValidation
		up.Devel = true
		up.PostRenderer = PostRenderer(hr)
		up.PostRenderStrategy = strategy
		res, err = up.RunWithContext(ctx, id.Name, ch, vals)
	} else {
		in := action4.NewInstall(o.Config)
		in.ReleaseName, in.Namespace = id.Name, id.Namespace
		in.DryRunStrategy = dry
		in.KubeVersion, in.APIVersions = o.KubeVersion, o.APIVersions
		in.Replace = true // a dry run may stand on an uninstalled release's name
		in.TakeOwnership = !hr.GetInstall().DisableTakeOwnership
		in.DisableHooks = hr.GetInstall().DisableHooks
		in.DisableOpenAPIValidation = true // see Render
		in.SkipSchemaValidation = hr.GetInstall().DisableSchemaValidation
		if o.Offline && o.Upgrading {
			in.TakeOwnership = !hr.GetUpgrade().DisableTakeOwnership
			in.DisableHooks = hr.GetUpgrade().DisableHooks
			in.SkipSchemaValidation = hr.GetUpgrade().DisableSchemaValidation
		}
		in.Devel = true
		in.SkipCRDs = true
		in.PostRenderer = PostRenderer(hr)
		in.PostRenderStrategy = strategy
		res, err = in.RunWithContext(ctx, ch, vals)
	}
	if err != nil {
		return nil, fmt.Errorf("render chart %s-%s as helm-controller would: %w", ch.Name(), ch.Metadata.Version, redact(err))
	}
	rel, ok := res.(*release4.Release)
	if !ok || rel == nil {
		return nil, fmt.Errorf("render chart %s: the Helm 4 SDK returned a %T", ch.Name(), res)
	}
	return &Rendered{Identity: id, Chart: ch, ConfigDigest: ConfigDigest(vals), Manifest: rel.Manifest, Revision: rel.Version, Upgrade: upgrade, values: vals}, nil
}
