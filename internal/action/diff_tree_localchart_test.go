package action

import (
	"testing"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// TestLocalChart: the digest of a chart the tree holds changes with the chart's files, a
// file:// dependency's, a valuesFiles entry's and (reconcileStrategy Revision) the commit, and
// not with a file the chart does not read; a chart from a HelmRepository has none.
func TestLocalChart(t *testing.T) {
	files := map[string]string{
		"clusters/c/sync.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: apps}
spec:
  interval: 1h
  chart:
    spec:
      chart: ./charts/app
      valuesFiles: [./charts/app/values.yaml, ./env/prod.yaml]
      reconcileStrategy: Revision
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: remote, namespace: apps}
spec: {interval: 1h, chart: {spec: {chart: app, sourceRef: {kind: HelmRepository, name: r}}}}
`,
		"charts/app/Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- {name: lib, version: 1.0.0, repository: file://../lib}\n",
		"charts/app/values.yaml":       "a: 1\n",
		"charts/app/templates/cm.yaml": "kind: ConfigMap\n",
		"charts/lib/Chart.yaml":        "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
		"charts/lib/templates/_x.tpl":  "{{- define \"x\" }}x{{ end }}\n",
		"env/prod.yaml":                "a: 2\n",
		"charts/unrelated/Chart.yaml":  "apiVersion: v2\nname: unrelated\nversion: 1.0.0\n",
		"charts/unrelated/values.yaml": "b: 1\n",
	}
	digests := func(edit map[string]string, revision string) (string, string) {
		t.Helper()
		all := map[string]string{}
		for _, m := range []map[string]string{files, edit} {
			for name, text := range m {
				all[name] = text
			}
		}
		tree := loadTree(t, all, fluxtree.Options{Revision: revision})
		if len(tree.HelmReleases) != 2 {
			t.Fatalf("HelmReleases %d, problems %v", len(tree.HelmReleases), tree.Problems)
		}
		return localChart(tree.HelmReleases[0], tree), localChart(tree.HelmReleases[1], tree)
	}
	base, remote := digests(nil, "0123456789abcdef")
	if base == "" || remote != "" {
		t.Fatalf("digests %q and %q: want one for the chart of the tree, none for the HelmRepository's", base, remote)
	}
	for name, tc := range map[string]struct {
		edit     map[string]string
		revision string
		same     bool
	}{
		"a template":            {edit: map[string]string{"charts/app/templates/cm.yaml": "kind: Secret\n"}},
		"a file:// dependency":  {edit: map[string]string{"charts/lib/templates/_x.tpl": "{{- define \"x\" }}y{{ end }}\n"}},
		"a valuesFiles entry":   {edit: map[string]string{"env/prod.yaml": "a: 3\n"}},
		"the commit (Revision)": {revision: "fedcba9876543210"},
		"another chart":         {edit: map[string]string{"charts/unrelated/values.yaml": "b: 2\n"}, same: true},
	} {
		rev := tc.revision
		if rev == "" {
			rev = "0123456789abcdef"
		}
		got, _ := digests(tc.edit, rev)
		if (got == base) != tc.same {
			t.Errorf("%s: digest the same %v, want %v", name, got == base, tc.same)
		}
	}
}
