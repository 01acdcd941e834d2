package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serviceMonitorCRD is the ServiceMonitor CRD of monitoring.coreos.com, served at v1.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, plural: servicemonitors}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// TestDiffTreeCapabilities: the CustomResourceDefinitions a cluster's tree applies are API
// versions its charts see in .Capabilities.APIVersions (group/version and group/version/Kind),
// as helm-controller's render sees them once applied; a tree without them renders as helm
// template does.
func TestDiffTreeCapabilities(t *testing.T) {
	chart := map[string]string{
		"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/templates/web.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data: {interval: {{ .Values.interval | quote }}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec: {endpoints: [{port: http, interval: {{ .Values.interval }}}], selector: {matchLabels: {app: web}}}
{{- end }}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-by-kind}
data: {interval: {{ .Values.interval | quote }}}
{{- end }}
`,
	}
	const note = "HelmRelease web/web: chart web 1.0.0 asks .Capabilities.APIVersions for monitoring.coreos.com/v1, monitoring.coreos.com/v1/ServiceMonitor, which neither Kubernetes, --api-versions, the CRDs the tree applies nor the chart's crds/ serve: rendered as on a cluster that does not; if yours does (CRDs installed another way), pass --api-versions monitoring.coreos.com/v1 --api-versions monitoring.coreos.com/v1/ServiceMonitor"
	for _, tc := range []struct {
		name    string
		withCRD bool
		want    []string
		note    string
	}{
		{"crd", true, []string{"ConfigMap web/web data.interval", "ConfigMap web/web-by-kind data.interval", "ServiceMonitor.monitoring.coreos.com web/web spec.endpoints[0].interval"}, ""},
		{"none", false, []string{"ConfigMap web/web data.interval"}, note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := func(interval string) string { return namespacedWeb("{interval: "+interval+"}", "") }
			files := map[string]string{"clusters/prod/web.yaml": web("30s")}
			if tc.withCRD {
				files["clusters/prod/crd.yaml"] = serviceMonitorCRD
			}
			dir := gitTree(t, bootstrapped(chart, files))
			writeTree(t, dir, map[string]string{"clusters/prod/web.yaml": web("15s")})
			code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
			if code != ExitDrift {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			doc := oneReport(t, out)
			if notes := strings.Join(doc.Notes, "\n"); tc.note != "" && !strings.Contains(notes, tc.note) || tc.note == "" && strings.Contains(notes, "asks .Capabilities") {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			var rows []string
			for _, o := range doc.HelmReleases[0].Report.Objects {
				for _, r := range o.Rows {
					rows = append(rows, o.Object+" "+r.Path)
				}
			}
			if strings.Join(rows, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("rows\n  %s\nwant\n  %s", strings.Join(rows, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestDiffTreeCapabilitiesCorpus: the corpus's traefik chart, its ServiceMonitor enabled,
// refuses to render unless the cluster serves monitoring.coreos.com/v1; a cluster whose tree
// applies the ServiceMonitor CRD does, and the pull request's scrape interval previews as the
// ServiceMonitor's change. Without the CRD the refusal is named (exit 3).
func TestDiffTreeCapabilitiesCorpus(t *testing.T) {
	corpus := "../../../shared/corpus"
	if _, err := os.Stat(filepath.Join(corpus, "traefik")); err != nil {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") != "" {
			t.Fatal("HELM_DRIFT_REQUIRE_CORPUS is set but ../shared/corpus is absent")
		}
		t.Skip("../shared/corpus is absent (a user's clone): the corpus's traefik is not previewed")
	}
	abs, _ := filepath.Abs(corpus)
	traefik := func(interval string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: traefik}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: traefik, namespace: traefik}
spec: {url: https://traefik.github.io/charts, interval: 1h}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: traefik, namespace: traefik}
spec:
  interval: 1h
  chart:
    spec: {chart: traefik, version: "41.x", sourceRef: {kind: HelmRepository, name: traefik}}
  values:
    metrics: {prometheus: {serviceMonitor: {enabled: true, interval: ` + interval + `}}}
`
	}
	for _, tc := range []struct {
		name    string
		withCRD bool
		code    int
		want    string
	}{
		{"crd", true, ExitDrift, `"object": "ServiceMonitor.monitoring.coreos.com traefik/traefik"`},
		{"none", false, ExitUnmeasured, "You have to deploy monitoring.coreos.com/v1 first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"clusters/prod/traefik.yaml": traefik("30s")}
			if tc.withCRD {
				files["clusters/prod/crd.yaml"] = serviceMonitorCRD
			}
			dir := gitTree(t, bootstrapped(files))
			writeTree(t, dir, map[string]string{"clusters/prod/traefik.yaml": traefik("15s")})
			code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json", "--chart-source", "https://traefik.github.io/charts="+abs)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}
