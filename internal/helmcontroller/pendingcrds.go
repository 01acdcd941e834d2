package helmcontroller

import (
	"errors"
	"fmt"
	"strings"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	action4 "helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil4 "helm.sh/helm/v4/pkg/chart/v2/util"
	kube4 "helm.sh/helm/v4/pkg/kube"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"

	"github.com/helm-drift/helm-drift/internal/kubeapis"
)

// withPendingCRDs is the cluster's configuration for a render of ch whose crds/ holds CRDs
// the cluster does not serve yet, and helm-controller will apply before it renders (its crds
// policy for this install or upgrade is not Skip): a copy of the configuration whose
// capabilities are the cluster's discovery and those CRDs' versions, and whose objects of
// those kinds map as the CRDs say. helm-controller's render sees them served (it applies the
// CRDs, then asks discovery), and its dry run maps the chart's custom resources; without them,
// the preview's dry run fails ("no matches for kind ... ensure CRDs are installed first") on
// a chart that ships its CRDs and its custom resources together. Lookup still asks the
// cluster. Nil when there is no such CRD.
// xref: helm-controller internal/action/crds.go applyCRDs; helm.sh/helm/v4
// pkg/action/action.go getCapabilities.
func withPendingCRDs(hr *v2.HelmRelease, ch *chartv2.Chart, vals map[string]any, cfg *action4.Configuration, last *release4.Release) (*action4.Configuration, error) {
	if len(ch.CRDObjects()) == 0 || crdPolicy(hr, last != nil) == string(v2.Skip) {
		return nil, nil
	}
	getter, ok := cfg.RESTClientGetter.(genericclioptions.RESTClientGetter)
	if !ok {
		return nil, nil
	}
	if err := chartutil4.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart %s: dependencies: %w", ch.Name(), err)
	}
	dc, err := getter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	dc.Invalidate()
	served, err := action4.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("the cluster's API versions: %w", err)
	}
	extra := meta.NewDefaultRESTMapper(nil)
	var pending []string
	for _, c := range ch.CRDObjects() {
		for _, crd := range kubeapis.CRDsIn(c.File.Data) {
			for _, v := range kubeapis.CRDServes(crd) {
				if served.Has(v) {
					continue
				}
				pending = append(pending, v)
				if strings.Count(v, "/") == 2 { // "group/version/Kind"
					i := strings.LastIndex(v, "/")
					addMapping(extra, schema.FromAPIVersionAndKind(v[:i], v[i+1:]), crd)
				}
			}
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the cluster's version: %w", err)
	}
	out := action4.NewConfiguration()
	g := pendingGetter{RESTClientGetter: getter, extra: extra}
	out.RESTClientGetter, out.KubeClient = g, kube4.New(g)
	out.Releases, out.RegistryClient = cfg.Releases, cfg.RegistryClient
	out.Capabilities = &common.Capabilities{
		APIVersions: append(served, pending...),
		KubeVersion: common.KubeVersion{Version: info.GitVersion, Major: info.Major, Minor: info.Minor},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}
	return out, nil
}

// addMapping maps gvk to the resource the CRD names, in its scope.
func addMapping(m *meta.DefaultRESTMapper, gvk schema.GroupVersionKind, crd map[string]any) {
	spec, _ := crd["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	plural, _ := names["plural"].(string)
	singular, _ := names["singular"].(string)
	scope := meta.RESTScopeNamespace
	if s, _ := spec["scope"].(string); s == "Cluster" {
		scope = meta.RESTScopeRoot
	}
	gvr := gvk.GroupVersion().WithResource(plural)
	m.AddSpecific(gvk, gvr, gvk.GroupVersion().WithResource(singular), scope)
}

// pendingGetter is the cluster's client getter, whose REST mapper also maps the kinds of
// CRDs not applied yet (after the cluster's own).
type pendingGetter struct {
	genericclioptions.RESTClientGetter
	extra meta.RESTMapper
}

// ToRESTMapper maps as the cluster does, then as the pending CRDs say.
func (g pendingGetter) ToRESTMapper() (meta.RESTMapper, error) {
	base, err := g.RESTClientGetter.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{base, g.extra}}, nil
}

// lastRelease is the release's last revision (nil: none, or uninstalled) as Render reads it:
// last when known, else from the configuration's storage.
func lastRelease(cfg *action4.Configuration, id Identity, last *release4.Release, known bool) (*release4.Release, error) {
	if !known {
		l, err := cfg.Releases.Last(id.Name)
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("release %s/%s: %w", id.Storage, id.Name, err)
		}
		last, _ = l.(*release4.Release)
	}
	if last != nil && (last.Info == nil || last.Info.Status.String() == "uninstalled") {
		return nil, nil
	}
	return last, nil
}
