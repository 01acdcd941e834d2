package e2e

import (
	"strings"
	"testing"
)

// TestCompletion: Helm 3 and Helm 4 complete the drift plugin's commands and flags (its
// completion.yaml) and, from the cluster, release names for "diff release" and "self status"
// and HelmRelease names for "diff helmrelease" (its plugin.complete), in the namespace typed.
func TestCompletion(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			h.installPlugins(t)
			ns := cluster.Namespace(t)
			h.run(t, false, nil, "install", "webshop", "testdata/charts/webapp", "-n", ns)
			applyYAML(t, `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: storefront, namespace: `+ns+`}
spec:
  interval: 1h
  suspend: true
  chartRef: {kind: OCIRepository, name: none}`)
			complete := func(words ...string) string {
				t.Helper()
				out, _ := h.run(t, false, nil, append([]string{"__complete", "drift"}, words...)...)
				return out
			}
			for _, tc := range []struct {
				words []string
				want  []string
			}{
				{[]string{""}, []string{"render", "owners", "diff", "self", "version"}},
				{[]string{"diff", ""}, []string{"upgrade", "release", "helmrelease"}},
				{[]string{"diff", "release", "--norm"}, []string{"--normalize"}},
				{[]string{"self", ""}, []string{"resume", "status", "handback", "uninstall"}},
				{[]string{"diff", "release", "-n", ns, "web"}, []string{"webshop"}},
				{[]string{"self", "status", "-n", ns, ""}, []string{"webshop"}},
				{[]string{"diff", "helmrelease", "-n", ns, ""}, []string{"storefront"}},
			} {
				out := complete(tc.words...)
				for _, w := range tc.want {
					if !strings.Contains(out, w+"\n") {
						t.Errorf("helm __complete drift %v: lacks %q:\n%s", tc.words, w, out)
					}
				}
			}
		})
	}
}
