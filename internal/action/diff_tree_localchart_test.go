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
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: shared, namespace: charts}
spec: {chart: ./charts/app, interval: 1h, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: charts}
spec: {interval: 1h, url: https://example.com/fleet, ref: {branch: main}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: byref, namespace: apps}
spec: {interval: 1h, chartRef: {kind: HelmChart, name: shared, namespace: charts}}
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
	// digests are the HelmReleases' by name: app's (spec.chart), byref's (a HelmChart of the
	// tree, without reconcileStrategy), remote's (a HelmRepository's).
	digests := func(edit map[string]string, revision string) map[string]string {
		t.Helper()
		all := map[string]string{}
		for _, m := range []map[string]string{files, edit} {
			for name, text := range m {
				all[name] = text
			}
		}
		tree := loadTree(t, all, fluxtree.Options{Revision: revision})
		if len(tree.HelmReleases) != 3 {
			t.Fatalf("HelmReleases %d, problems %v", len(tree.HelmReleases), tree.Problems)
		}
		out := map[string]string{}
		for _, h := range tree.HelmReleases {
			out[h.Name] = localChart(h, tree)
		}
		return out
	}
	base := digests(nil, "0123456789abcdef")
	if base["app"] == "" || base["byref"] == "" || base["remote"] != "" {
		t.Fatalf("digests %q: want one for the charts of the tree, none for the HelmRepository's", base)
	}
	for name, tc := range map[string]struct {
		edit     map[string]string
		revision string
		same     bool // for app
		byref    bool // byref's changes too
	}{
		"a template":            {edit: map[string]string{"charts/app/templates/cm.yaml": "kind: Secret\n"}, byref: true},
		"a file:// dependency":  {edit: map[string]string{"charts/lib/templates/_x.tpl": "{{- define \"x\" }}y{{ end }}\n"}, byref: true},
		"a valuesFiles entry":   {edit: map[string]string{"env/prod.yaml": "a: 3\n"}},
		"the commit (Revision)": {revision: "fedcba9876543210"},
		"another chart":         {edit: map[string]string{"charts/unrelated/values.yaml": "b: 2\n"}, same: true},
	} {
		rev := tc.revision
		if rev == "" {
			rev = "0123456789abcdef"
		}
		got := digests(tc.edit, rev)
		if (got["app"] == base["app"]) != tc.same {
			t.Errorf("%s: app's digest the same %v, want %v", name, got["app"] == base["app"], tc.same)
		}
		if (got["byref"] != base["byref"]) != tc.byref {
			t.Errorf("%s: byref's digest changed %v, want %v", name, got["byref"] != base["byref"], tc.byref)
		}
	}
}
