package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		"templates/widget.yaml": fmt.Sprintf(`{{- if .Capabilities.APIVersions.Has "%[1]s/v1/Widget" }}
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
`, group),
	})
	t.Cleanup(func() {
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		_ = cluster.Dynamic.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
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
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=e2e@example.com", "-c", "user.name=e2e"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	writeFiles(t, repo, map[string]string{"apps/sources.yaml": source})
	git("add", "-A")
	git("commit", "-qm", "base")
	writeFiles(t, repo, map[string]string{"apps/widgets.yaml": release})

	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), "diff", "tree", "--base", "HEAD", "--kube-version", "v1.34.2",
		"--chart-cache", filepath.Join(t.TempDir(), "cache"), "-o", "json")
	cmd.Dir, cmd.Env = repo, append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("diff tree: %v, want exit 2\n%s", err, out)
	}
	var doc treeJSON
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.HelmReleases) != 1 || doc.HelmReleases[0].Report == nil {
		t.Fatalf("%v\n%s", err, out)
	}
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
