package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffTreeMarkers: kustomize-controller leaves an object as the cluster holds it when a
// marker says so (kustomize.toolkit.fluxcd.io/reconcile: disabled or ssa: Ignore, on the
// object or on the cluster's copy; ssa: IfNotPresent once the cluster holds it). The preview
// reads the head as the cluster will hold it: a pull request's edit of such an object moves
// nothing, and a note names the object and the marker.
func TestDiffTreeMarkers(t *testing.T) {
	const (
		cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-values\n%s" + "data:\n  values.yaml: |\n    image: nginx:%s\n"
		hr = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
%sspec:
  interval: %s
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  values: {replicas: %s, greeting: hi, token: t}
`
		ifNotPresent = "  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}\n"
		disabled     = "  labels: {kustomize.toolkit.fluxcd.io/reconcile: disabled}\n"
		ignore       = "  annotations: {kustomize.toolkit.fluxcd.io/ssa: ignore}\n"
	)
	f := fmt.Sprintf
	for _, tc := range []struct {
		name       string
		base, head [2]string // the ConfigMap's and the HelmRelease's texts
		code       int
		note       string
	}{
		{"values ConfigMap IfNotPresent", [2]string{f(cm, ifNotPresent, "1.27"), f(hr, "", "10m", "1")}, [2]string{f(cm, ifNotPresent, "1.28"), f(hr, "", "10m", "1")},
			ExitOK, "ConfigMap web/web-values (Kustomization flux-system/apps): it is marked kustomize.toolkit.fluxcd.io/ssa: IfNotPresent and the cluster holds it: kustomize-controller does not update it: its changes are not applied"},
		{"HelmRelease reconcile disabled", [2]string{f(cm, "", "1.27"), f(hr, disabled, "10m", "1")}, [2]string{f(cm, "", "1.27"), f(hr, disabled, "10m", "3")},
			ExitOK, "HelmRelease web/web (Kustomization flux-system/apps): it is marked kustomize.toolkit.fluxcd.io/reconcile: disabled: kustomize-controller never applies it: its changes are not applied"},
		{"marker dropped in the head", [2]string{f(cm, "", "1.27"), f(hr, ignore, "10m", "1")}, [2]string{f(cm, "", "1.27"), f(hr, "", "10m", "3")},
			ExitOK, "the cluster's copy is marked kustomize.toolkit.fluxcd.io/ssa: ignore: kustomize-controller never applies it (the marker must be taken off in the cluster)"},
		// Unmarked: the same edits move the release.
		{"unmarked", [2]string{f(cm, "", "1.27"), f(hr, "", "10m", "1")}, [2]string{f(cm, "", "1.28"), f(hr, "", "10m", "3")}, ExitDrift, ""},
		// A marker elsewhere in the tree changes nothing of this one's edits.
		{"IfNotPresent on a new object", [2]string{"", f(hr, "", "10m", "1")}, [2]string{f(cm, ifNotPresent, "1.28"), f(hr, "", "10m", "1")}, ExitDrift, ""},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			files := map[string]string{}
			for k, v := range treeBase {
				files[k] = v
			}
			files["apps/prod/kustomization.yaml"] = "namespace: web\nresources: [web.yaml, values.yaml]\n"
			files["apps/prod/web.yaml"], files["apps/prod/values.yaml"] = tc.base[1], tc.base[0]
			if tc.base[0] == "" {
				files["apps/prod/kustomization.yaml"] = "namespace: web\nresources: [web.yaml]\n"
				files["apps/prod/web.yaml"] = strings.Replace(tc.base[1], "  valuesFrom:\n  - {kind: ConfigMap, name: web-values}\n", "", 1)
				delete(files, "apps/prod/values.yaml")
			}
			dir := gitTree(t, files)
			writeTree(t, dir, map[string]string{"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml, values.yaml]\n",
				"apps/prod/values.yaml": tc.head[0], "apps/prod/web.yaml": tc.head[1]})
			code, out, errOut := runTree(t, dir, "--base", "HEAD")
			if code != tc.code || !strings.Contains(out+errOut, tc.note) {
				t.Errorf("exit %d, want %d and the note %q\n%s%s", code, tc.code, tc.note, out, errOut)
			}
			if tc.note == "" && strings.Contains(out+errOut, "kustomize-controller") {
				t.Errorf("a note of an object not applied, where none is kept:\n%s%s", out, errOut)
			}
		})
	}
}
