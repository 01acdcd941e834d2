package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestDiffTreePreserveValues: a HelmRelease that upgrades with spec.upgrade.preserveValues
// renders its head as the Helm SDK's --reuse-values does: a key the head's values remove keeps
// the base release's value, and the new chart version's defaults give way to the base
// chart's. Without it, the same pull request moves both.
func TestDiffTreePreserveValues(t *testing.T) {
	chart := func(name, version, image string) map[string]string {
		return map[string]string{
			"charts/web/Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
			"charts/web/values.yaml": "image: " + image + "\nreplicas: 1\ngreeting: hi\n",
			"charts/web/templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        env:
        - {name: GREETING, value: {{ .Values.greeting | quote }}}
`,
		}
	}
	const (
		image    = "Deployment.apps web/web spec.template.spec.containers[name=web].image"
		replicas = "Deployment.apps web/web spec.replicas"
		greeting = "Deployment.apps web/web spec.template.spec.containers[name=web].env[name=GREETING].value"
		cause    = "upgrade.preserveValues: Helm reuses the base release's values"
	)
	for _, tc := range []struct {
		name, upgrade, chart, next string
		want                       []string
	}{
		{"preserved", "{preserveValues: true}", "web", "upgrade", []string{greeting}},
		{"reset", "{preserveValues: false}", "web", "upgrade", []string{replicas, greeting, image}},
		{"default", "{}", "web", "upgrade", []string{replicas, greeting, image}},
		// The chart's name changes: helm-controller uninstalls and installs afresh.
		{"reinstalled", "{preserveValues: true, chartNameChangeStrategy: Reinstall}", "site", "reinstall", []string{replicas, greeting, image}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := bootstrapped(chart("web", "1.0.0", "nginx:1.27"),
				map[string]string{"clusters/prod/web.yaml": namespacedWeb("{replicas: 3}", "  upgrade: "+tc.upgrade+"\n")})
			dir := gitTree(t, files)

			// The pull request: the chart's next version (another default image), the
			// replicas left to the chart, another greeting.
			head := chart(tc.chart, "1.1.0", "nginx:1.28")
			head["clusters/prod/web.yaml"] = strings.Replace(files["clusters/prod/web.yaml"], "{replicas: 3}", "{greeting: bonjour}", 1)
			writeTree(t, dir, head)
			code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
			if code != ExitDrift {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			doc := oneReport(t, out)
			var rows []string
			for _, o := range doc.HelmReleases[0].Report.Objects {
				for _, r := range o.Rows {
					if strings.HasPrefix(o.Object, "Deployment.apps web/web") && !strings.Contains(r.Path, "labels") {
						rows = append(rows, o.Object+" "+r.Path)
					}
				}
			}
			slices.Sort(rows)
			if !slices.Equal(rows, tc.want) {
				t.Errorf("rows\n  %s\nwant\n  %s", strings.Join(rows, "\n  "), strings.Join(tc.want, "\n  "))
			}
			causes := strings.Join(doc.HelmReleases[0].Report.Causes, "\n")
			if reused := strings.Contains(causes, cause); reused != (tc.name == "preserved") {
				t.Errorf("causes name --reuse-values: %v, want %v:\n%s", reused, !reused, causes)
			}
			if doc.HelmReleases[0].Next != tc.next {
				t.Errorf("next %q, want %s", doc.HelmReleases[0].Next, tc.next)
			}
			// The head drops replicas: Helm stores the merged values, which helm-controller's
			// composed ones differ from on every later reconcile.
			if again := strings.Contains(causes, "every later reconcile"); again != (tc.name == "preserved") {
				t.Errorf("causes name the upgrades on every reconcile: %v, want %v:\n%s", again, !again, causes)
			}
		})
	}
	// The head keeps every key of the base's values: what Helm stores is what helm-controller
	// composes, and nothing is upgraded again.
	files := bootstrapped(chart("web", "1.0.0", "nginx:1.27"),
		map[string]string{"clusters/prod/web.yaml": namespacedWeb("{replicas: 3}", "  upgrade: {preserveValues: true}\n")})
	dir := gitTree(t, files)
	writeTree(t, dir, map[string]string{"clusters/prod/web.yaml": strings.Replace(files["clusters/prod/web.yaml"], "{replicas: 3}", "{replicas: 4}", 1)})
	code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
	if causes := strings.Join(oneReport(t, out).HelmReleases[0].Report.Causes, "\n"); code != ExitDrift || strings.Contains(causes, "every later reconcile") || !strings.Contains(causes, cause) {
		t.Errorf("no key dropped: exit %d, causes\n%s%s", code, causes, errOut)
	}
}

// TestDiffTreeUpgradeSettings: the head of a HelmRelease whose release the base installed is
// rendered with spec.upgrade's settings, as helm-controller upgrades it, not spec.install's:
// a value the chart's schema refuses fails the preview only where the upgrade validates it.
func TestDiffTreeUpgradeSettings(t *testing.T) {
	chart := map[string]string{
		"charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
		"charts/web/templates/web.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {replicas: {{ .Values.replicas | quote }}}\n",
	}
	for _, tc := range []struct {
		name, settings string
		code           int
		want           string
	}{
		{"upgrade validates", "  install: {disableSchemaValidation: true}\n", ExitUnmeasured, "values don't meet the specifications of the schema"},
		{"upgrade does not", "  upgrade: {disableSchemaValidation: true}\n", ExitDrift, "ConfigMap web/web"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			web := func(replicas string) string { return namespacedWeb("{replicas: "+replicas+"}", tc.settings) }
			dir := gitTree(t, bootstrapped(chart, map[string]string{"clusters/prod/web.yaml": web("1")}))
			writeTree(t, dir, map[string]string{"clusters/prod/web.yaml": web("many")})
			code, out, errOut := runTree(t, dir, "--base", "HEAD")
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}
