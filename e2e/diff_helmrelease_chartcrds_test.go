package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// TestDiffHelmReleaseChartCRDs: a new HelmRelease of a chart that ships its CRD in crds/ and
// its custom resource in templates (as operators' charts do), previewed against the cluster
// with --file before anything is applied. helm-controller applies the CRD first and renders
// with the cluster's discovery after: the preview renders the same (the chart sees its CRD's
// version served), maps the custom resource as the CRD says, and says it is created rather
// than refused; every object it predicts is what the real helm-controller then installs, and
// once installed nothing diverges.
func TestDiffHelmReleaseChartCRDs(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	group := ns + ".example.com"
	chart := widgetsChart(t, group, widgetsTemplate)
	charts := chartRepository(t, h, chart)
	applyYAML(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h}
`, ns, charts))
	release := fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: widgets, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: widgets, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
`, ns)
	file := filepath.Join(t.TempDir(), "hr.yaml")
	if err := os.WriteFile(file, []byte(release), 0o644); err != nil {
		t.Fatal(err)
	}

	out, code := hrDiff(t, "--file", file, "-o", "json")
	var rep diff.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 2 || err != nil {
		t.Fatalf("diff helmrelease --file: exit %d (%v), want 2\n%s", code, err, out)
	}
	widget := "Widget." + group + " " + ns + "/widgets"
	var predicted []string
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			if o.Object == widget && (!r.Resolved || !strings.HasPrefix(r.Why, "created")) {
				t.Errorf("%s: %q (resolved %v), want created", o.Object, r.Why, r.Resolved)
			}
		}
		if !strings.HasPrefix(o.Object, "CustomResourceDefinition.") {
			predicted = append(predicted, o.Object+" (whole object)")
		}
	}

	applyYAML(t, release)
	waitTreeRevision(t, ns, "widgets", 1)
	happened := manifestChanges(t, "", storedRelease(t, ns, "widgets").Manifest, ns)
	if strings.Join(predicted, "\n") != strings.Join(happened, "\n") {
		t.Errorf("predicted\n  %s\nhelm-controller installed\n  %s", strings.Join(predicted, "\n  "), strings.Join(happened, "\n  "))
	}
	if !strings.Contains(strings.Join(happened, "\n"), widget) || !strings.Contains(strings.Join(happened, "\n"), "/widgets-served-true ") {
		t.Errorf("helm-controller installed %v: want the Widget, and the chart seeing its CRD served", happened)
	}
	if out, code := hrDiff(t, "widgets", "-n", ns); code != 0 {
		t.Errorf("once installed: exit %d, want 0\n%s", code, out)
	}
}

// widgetsTemplate is widgetsChart's template: a Widget, and a ConfigMap named for whether the
// chart sees the CRD's version served (widgets-served-true); %[1]s is the CRD's group.
const widgetsTemplate = `apiVersion: %[1]s/v1
kind: Widget
metadata: {name: {{ .Release.Name }}}
spec: {size: 3}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-served-{{ .Capabilities.APIVersions.Has "%[1]s/v1/Widget" }}}
data: {size: "3"}
`

// widgetsChart writes chart widgets 1.0.0: its CRD (kind Widget of group) in crds/, and
// template in templates (%[1]s in it the group). It returns its directory, and removes the CRD
// after the test.
func widgetsChart(t *testing.T, group, template string) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "widgets")
	writeFiles(t, chart, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: widgets\nversion: 1.0.0\n",
		"crds/widget.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group),
		"templates/widget.yaml": fmt.Sprintf(template, group),
	})
	t.Cleanup(func() {
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		_ = cluster.Dynamic.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	return chart
}

// TestDiffUpgradeInstallChartCRDs: diff upgrade --install of the same chart, before anything
// is applied, with each Helm: helm install creates crds/ first and reads the capabilities
// after, so the preview renders the chart seeing its CRD served and its Widget created (not
// refused); the real helm install then installs exactly the objects predicted.
func TestDiffUpgradeInstallChartCRDs(t *testing.T) {
	t.Parallel()
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			group := ns + ".example.com"
			chart := widgetsChart(t, group, widgetsTemplate)
			out, errOut, code := diffBinary(t, "upgrade", "widgets", chart, "--install", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--engine", helmName, "-o", "json")
			var rep diff.Report
			if err := json.Unmarshal([]byte(out), &rep); code != 2 || err != nil {
				t.Fatalf("diff upgrade --install: exit %d (%v), want 2\n%s%s", code, err, out, errOut)
			}
			var predicted []string
			for _, o := range rep.Objects {
				for _, r := range o.Rows {
					if !r.Resolved || !strings.HasPrefix(r.Why, "created") {
						t.Errorf("%s: %q (resolved %v), want created", o.Object, r.Why, r.Resolved)
					}
				}
				if !strings.HasPrefix(o.Object, "CustomResourceDefinition.") {
					predicted = append(predicted, o.Object+" (whole object)")
				}
			}
			h.run(t, false, nil, "install", "widgets", chart, "-n", ns)
			happened := manifestChanges(t, "", storedRelease(t, ns, "widgets").Manifest, ns)
			if strings.Join(predicted, "\n") != strings.Join(happened, "\n") || !strings.Contains(strings.Join(happened, "\n"), "/widgets-served-true ") {
				t.Errorf("predicted\n  %s\nhelm install installed\n  %s", strings.Join(predicted, "\n  "), strings.Join(happened, "\n  "))
			}
		})
	}
}
