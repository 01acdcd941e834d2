package action

import (
	"context"
	"fmt"
	"sort"

	"github.com/helm-drift/helm-drift/internal/flux"
	helmaction "helm.sh/helm/v3/pkg/action"
)

// ReleaseNames lists the names of the Helm releases of namespace ("" for all), in every
// status, sorted.
func ReleaseNames(cfg *Configuration, namespace string) ([]string, error) {
	h, err := cfg.Helm3(namespace)
	if err != nil {
		return nil, err
	}
	list := helmaction.NewList(h)
	list.All = true
	rels, err := list.Run()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rels))
	for _, r := range rels {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names, nil
}

// HelmReleaseNames lists the names of the Flux HelmReleases of namespace ("" for all), sorted.
func HelmReleaseNames(ctx context.Context, cfg *Configuration, namespace string) ([]string, error) {
	objs, err := listHelmReleases(ctx, cfg, namespace)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if n, ok := md["name"].(string); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// listHelmReleases lists the Flux HelmReleases of namespace ("" for all), whole.
func listHelmReleases(ctx context.Context, cfg *Configuration, namespace string) ([]map[string]any, error) {
	cl, err := cfg.Live(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := cl.ListObjects(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, namespace)
	if err != nil {
		return nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	return objs, nil
}
