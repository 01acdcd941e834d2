package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffTreePredictsChartCRDs: a chart that renders its custom resource only when the
// cluster serves the CRD its crds/ directory holds (.Capabilities.APIVersions.Has) previews,
// with no cluster, as the real helm-controller installs it: helm-controller applies crds/
// first (install.crds: Create) and renders with the cluster's discovery after, so the custom
// resource is rendered, not the chart's fallback; the rows predicted are the objects
// helm-controller's release then holds (crds/ is applied beside the release, not in it).
func TestDiffTreePredictsChartCRDs(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	group := ns + ".example.com"
	chart := widgetsChart(t, group, `{{- if .Capabilities.APIVersions.Has "%[1]s/v1/Widget" }}
apiVersion: %[1]s/v1
kind: Widget
metadata: {name: {{ .Release.Name }}}
spec: {size: 3}
{{- else }}
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-no-widgets}
data: {widgets: "not served"}
{{- end }}
`)
	charts := chartRepository(t, h, chart)
	source := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h}
`, ns, charts)
	release := fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: widgets, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: widgets, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
`, ns)
	doc, out := offlinePreview(t, map[string]string{"apps/sources.yaml": source}, map[string]string{"apps/widgets.yaml": release})
	var predicted []string
	crd := false
	for _, row := range rowsOf(doc.HelmReleases[0].Report) {
		if strings.HasPrefix(row, "CustomResourceDefinition.apiextensions.k8s.io widgets."+group+" ") {
			crd = true
			continue
		}
		predicted = append(predicted, row)
	}
	if !crd {
		t.Errorf("the preview does not show the CRD the install applies: %s", out)
	}

	applyYAML(t, source)
	applyYAML(t, release)
	waitTreeRevision(t, ns, "widgets", 1)
	happened := manifestChanges(t, "", storedRelease(t, ns, "widgets").Manifest, ns)
	if strings.Join(predicted, "\n") != strings.Join(happened, "\n") {
		t.Errorf("predicted rows\n  %s\nhelm-controller installed\n  %s", strings.Join(predicted, "\n  "), strings.Join(happened, "\n  "))
	}
	if want := "Widget." + group + " " + ns + "/widgets (whole object)"; strings.Join(happened, "\n") != want {
		t.Errorf("helm-controller installed %v, want %s alone: the test proves nothing", happened, want)
	}
}
