package action

import (
	"context"
	"fmt"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
)

// helmChartGetter answers a tree's reads, and the HelmChart helm-controller makes for a
// HelmRelease's spec.chart, which no tree holds: its generation becomes the chart version's
// build metadata when the chart has valuesFiles (1.1.0+3), and each change of the template
// raises it. With --live it is the cluster's; else, for the head of a HelmRelease the base
// has too, the one the base's template made, at generation 1 (the cluster's is not known
// offline: a change of the template then shows as +1 to +2); else none (helm-controller
// creates it, at generation 1).
type helmChartGetter struct {
	helmcontroller.Getter
	namespace, name string
	live            helmcontroller.Getter
	base            map[string]any
}

// Get implements helmcontroller.Getter.
func (g *helmChartGetter) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	if group == flux.SourceGroup && kind == "HelmChart" && namespace == g.namespace && name == g.name {
		if g.live != nil {
			if obj, err := g.live.Get(ctx, group, version, kind, namespace, name); err == nil {
				return obj, nil
			}
		}
		if g.base != nil {
			return g.base, nil
		}
	}
	return g.Getter.Get(ctx, group, version, kind, namespace, name)
}

// baseHelmChart is the HelmChart helm-controller made from h's spec.chart (nil when h is nil
// or has none), at generation 1, with no artifact: what a render needs of it.
// xref: helm-controller internal/reconcile/helmchart_template.go buildHelmChartFromTemplate.
func baseHelmChart(h *fluxtree.HelmRelease) map[string]any {
	if h == nil {
		return nil
	}
	hr, err := helmcontroller.Decode(h.Object)
	if err != nil || !hr.HasChartTemplate() {
		return nil
	}
	tpl := hr.Spec.Chart.Spec
	files := make([]any, 0, len(tpl.ValuesFiles))
	for _, f := range tpl.ValuesFiles {
		files = append(files, f)
	}
	return map[string]any{
		"apiVersion": flux.SourceGroup + "/" + flux.SourceVersion, "kind": "HelmChart",
		"metadata": map[string]any{"namespace": hr.Spec.Chart.GetNamespace(hr.Namespace), "name": hr.GetHelmChartName(), "generation": int64(1)},
		"spec": map[string]any{"chart": tpl.Chart, "version": tpl.Version, "valuesFiles": files, "ignoreMissingValuesFiles": tpl.IgnoreMissingValuesFiles,
			"sourceRef": map[string]any{"kind": tpl.SourceRef.Kind, "name": tpl.SourceRef.Name}},
	}
}

// generationNotes say, for each HelmRelease compared whose chart has valuesFiles, that its
// HelmChart's generation (the chart version's +N) is not known offline.
func generationNotes(todo []treePair) []string {
	var out []string
	for _, p := range todo {
		if p.base == nil || p.head == nil {
			continue
		}
		hr, err := helmcontroller.Decode(p.head.Object)
		if err != nil || !hr.HasChartTemplate() || len(hr.Spec.Chart.Spec.ValuesFiles) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("HelmRelease %s/%s: its chart's version carries the generation of HelmChart %s/%s (+N), which only the cluster knows: taken as 1 at the base (--live reads it)",
			hr.Namespace, hr.Name, hr.Spec.Chart.GetNamespace(hr.Namespace), hr.GetHelmChartName()))
	}
	return out
}
