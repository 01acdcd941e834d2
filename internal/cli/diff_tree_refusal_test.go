package cli

import (
	"strings"
	"testing"
)

// TestDiffTreeWillFail: a pull request that changes a field the API server will not let an
// update change (a Deployment's selector) previews the object as WILL-FAIL: helm-controller's
// upgrade fails on it. Another change of the same object is no refusal.
func TestDiffTreeWillFail(t *testing.T) {
	chart := func(selector string) map[string]string {
		return map[string]string{
			"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"charts/web/templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: ` + selector + `}}
  template:
    metadata: {labels: {app: ` + selector + `}}
    spec: {containers: [{name: web, image: nginx}]}
`,
		}
	}
	for _, tc := range []struct {
		name, selector, replicas string
		suspend                  bool
		willFail                 int
		want                     string
	}{
		{"selector", "site", "1", false, 1, "WILL-FAIL"},
		{"replicas", "web", "2", false, 0, "spec.replicas"},
		// The head suspends the HelmRelease: no upgrade, nothing to refuse.
		{"no upgrade", "site", "1", true, 0, "helm-controller does not upgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := namespacedWeb("{replicas: 1}", "")
			dir := gitTree(t, bootstrapped(chart("web"), map[string]string{"clusters/prod/web.yaml": web}))
			head := chart(tc.selector)
			head["charts/web/Chart.yaml"] = "apiVersion: v2\nname: web\nversion: 1.0.1\n"
			head["clusters/prod/web.yaml"] = strings.Replace(web, "{replicas: 1}", "{replicas: "+tc.replicas+"}", 1)
			if tc.suspend {
				head["clusters/prod/web.yaml"] = strings.Replace(head["clusters/prod/web.yaml"], "  interval: 10m\n", "  interval: 10m\n  suspend: true\n", 1)
			}
			writeTree(t, dir, head)
			code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
			doc := oneReport(t, out)
			if code != ExitDrift || doc.HelmReleases[0].Report.WillFail != tc.willFail {
				t.Errorf("exit %d, willFail %d; want 2 and %d\n%s%s", code, doc.HelmReleases[0].Report.WillFail, tc.willFail, out, errOut)
			}
			_, table, _ := runTree(t, dir, "--base", "HEAD")
			if !strings.Contains(table, tc.want) || tc.willFail == 0 && strings.Contains(table, "WILL-FAIL") {
				t.Errorf("table: want %q\n%s", tc.want, table)
			}
			// The summary says it first: the next reconcile's upgrade fails.
			if fails := strings.Contains(strings.SplitN(table, "\n", 3)[1], "upgrade (fails: WILL-FAIL)"); fails != (tc.willFail > 0) {
				t.Errorf("summary: the upgrade marked as failing %v, want %v\n%s", fails, tc.willFail > 0, table)
			}
		})
	}
}
