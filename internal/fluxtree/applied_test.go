package fluxtree

import (
	"context"
	"strings"
	"testing"
)

// TestSkipped: kustomize-controller's markers, as its apply reads them.
func TestSkipped(t *testing.T) {
	obj := func(labels, annotations map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
	}
	plain := obj(nil, nil)
	for _, tc := range []struct {
		name        string
		o, existing map[string]any
		want        string // a part of the reason, "" when applied
	}{
		{"plain", plain, plain, ""},
		{"reconcile disabled, a label", obj(map[string]any{reconcileMarker: "disabled"}, nil), plain, "never applies"},
		{"reconcile disabled, another case", obj(nil, map[string]any{reconcileMarker: "Disabled"}), nil, "never applies"},
		{"ssa ignore", obj(nil, map[string]any{ssaMarker: "ignore"}), nil, "never applies"},
		{"the cluster's copy disabled", plain, obj(nil, map[string]any{reconcileMarker: "disabled"}), "the cluster's copy"},
		{"IfNotPresent, held", obj(nil, map[string]any{ssaMarker: "IfNotPresent"}), plain, "does not update it"},
		{"IfNotPresent, not held", obj(nil, map[string]any{ssaMarker: "IfNotPresent"}), nil, ""},
		{"the cluster's copy IfNotPresent", plain, obj(nil, map[string]any{ssaMarker: "IfNotPresent"}), ""},
		{"ssa merge", obj(nil, map[string]any{ssaMarker: "Merge"}), plain, ""},
		{"reconcile enabled", obj(nil, map[string]any{reconcileMarker: "enabled"}), plain, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := skipped(tc.o, tc.existing)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("skipped: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadOverCluster: read over the tree the cluster was reconciled from, a substituteFrom
// ConfigMap marked ssa: IfNotPresent keeps the cluster's values, and the variables its
// HelmRelease reads are the cluster's; read alone, the tree says it holds a marker.
func TestLoadOverCluster(t *testing.T) {
	settings := func(value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\n" +
			"  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}\ndata: {CLUSTER: " + value + "}\n"
	}
	files := map[string]string{"apps/settings.yaml": settings("home"),
		"apps/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: age, namespace: flux-system}\nstringData: {key: k}\n",
		// A HelmRelease of cluster-apps' own build, which reads the variables of its own objects.
		"apps/kustomization.yaml": "resources: [settings.yaml, secret.yaml, web/ks.yaml, direct.yaml]\n",
		"apps/direct.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: direct, namespace: web}
spec:
  interval: 1h
  chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}
  values: {cluster: "${CLUSTER}"}
`}
	root := t.TempDir()
	writeFiles(t, root, operatorTree(files))
	base, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"apps/settings.yaml": settings("away")})
	// cluster is what web and direct read of ${CLUSTER}.
	cluster := func(tree *Tree) string {
		var out []string
		for _, name := range []string{"direct", "web"} {
			got := "(none)"
			for _, h := range tree.HelmReleases {
				if h.Name == name {
					got = h.Object["spec"].(map[string]any)["values"].(map[string]any)["cluster"].(string)
				}
			}
			out = append(out, name+"="+got)
		}
		return strings.Join(out, " ")
	}
	alone, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !alone.Marked || cluster(alone) != "direct=away web=away" || len(alone.NotApplied) > 0 {
		t.Errorf("read alone: marked %v, cluster %q, notes %v; want marked, away, no note", alone.Marked, cluster(alone), alone.NotApplied)
	}
	over, err := Load(context.Background(), root, Options{Work: t.TempDir(), Cluster: base})
	if err != nil {
		t.Fatal(err)
	}
	want := "ConfigMap flux-system/cluster-settings (Kustomization flux-system/cluster-apps): it is marked kustomize.toolkit.fluxcd.io/ssa: IfNotPresent and the cluster holds it"
	if cluster(over) != "direct=home web=home" || len(over.NotApplied) != 1 || !strings.Contains(over.NotApplied[0], want) {
		t.Errorf("read over the cluster: cluster %q, notes %v; want home and %q", cluster(over), over.NotApplied, want)
	}
}
