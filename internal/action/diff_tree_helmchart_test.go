package action

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// getterFunc adapts a function to helmcontroller.Getter.
type getterFunc func(kind, namespace, name string) (map[string]any, error)

func (f getterFunc) Get(_ context.Context, _, _, kind, namespace, name string) (map[string]any, error) {
	return f(kind, namespace, name)
}

// The HelmChart of a HelmRelease's spec.chart is the cluster's under --live, else the one the
// base's template made (at generation 1), else not there; every other read is the tree's.
func TestHelmChartGetter(t *testing.T) {
	base := baseHelmChart(&fluxtree.HelmRelease{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": "apps"},
		"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "webapp", "version": "1.0.0",
			"valuesFiles": []any{"values.yaml", "values-prod.yaml"},
			"sourceRef":   map[string]any{"kind": "HelmRepository", "name": "charts", "namespace": "flux-system"}}}},
	}})
	md, _ := base["metadata"].(map[string]any)
	spec, _ := base["spec"].(map[string]any)
	if md["namespace"] != "flux-system" || md["name"] != "apps-web" || md["generation"] != int64(1) || spec["chart"] != "webapp" ||
		spec["version"] != "1.0.0" || len(spec["valuesFiles"].([]any)) != 2 {
		t.Fatalf("the base's HelmChart: %v", base)
	}
	if baseHelmChart(nil) != nil {
		t.Error("a HelmRelease the base does not hold has a HelmChart of the base")
	}

	notFound := func(kind, ns, name string) (map[string]any, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: flux.SourceGroup, Resource: kind}, name)
	}
	tree := getterFunc(func(kind, ns, name string) (map[string]any, error) {
		if kind == "ConfigMap" {
			return map[string]any{"kind": "ConfigMap"}, nil
		}
		return notFound(kind, ns, name)
	})
	liveChart := map[string]any{"kind": "HelmChart", "metadata": map[string]any{"generation": int64(7)}}
	live := getterFunc(func(kind, ns, name string) (map[string]any, error) {
		if kind == "HelmChart" && ns == "flux-system" && name == "apps-web" {
			return liveChart, nil
		}
		return notFound(kind, ns, name)
	})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		g    *helmChartGetter
		want map[string]any
	}{
		{"--live", &helmChartGetter{Getter: tree, namespace: "flux-system", name: "apps-web", live: live, base: base}, liveChart},
		{"--live, not in the cluster", &helmChartGetter{Getter: tree, namespace: "flux-system", name: "apps-web", live: getterFunc(notFound), base: base}, base},
		{"offline", &helmChartGetter{Getter: tree, namespace: "flux-system", name: "apps-web", base: base}, base},
	} {
		got, err := c.g.Get(ctx, flux.SourceGroup, flux.SourceVersion, "HelmChart", "flux-system", "apps-web")
		if err != nil || got["metadata"].(map[string]any)["generation"] != c.want["metadata"].(map[string]any)["generation"] {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
		if cm, err := c.g.Get(ctx, "", "v1", "ConfigMap", "apps", "values"); err != nil || cm["kind"] != "ConfigMap" {
			t.Errorf("%s: a ConfigMap of the tree: %v, %v", c.name, cm, err)
		}
	}
	none := &helmChartGetter{Getter: tree, namespace: "flux-system", name: "apps-web"}
	if _, err := none.Get(ctx, flux.SourceGroup, flux.SourceVersion, "HelmChart", "flux-system", "apps-web"); !apierrors.IsNotFound(err) {
		t.Errorf("a new HelmRelease's HelmChart, offline: %v, want not found (helm-controller creates it)", err)
	}
}
