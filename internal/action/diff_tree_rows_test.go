package action

import (
	"testing"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
)

// TestTargetChange: helm-controller reinstalls a release whose storage namespace, namespace or
// name changes, and one whose chart's name changes only under chartNameChangeStrategy
// Reinstall; a new chart version is an upgrade.
func TestTargetChange(t *testing.T) {
	side := func(name, ns, storage, chart, strategy string) *treeSide {
		hr := &v2.HelmRelease{}
		if strategy != "" {
			hr.Spec.Upgrade = &v2.Upgrade{ChartNameChangeStrategy: v2.ChartNameChangeStrategy(strategy)}
		}
		return &treeSide{hr: hr, built: &helmcontroller.Built{Rendered: &helmcontroller.Rendered{
			Identity: helmcontroller.Identity{Name: name, Namespace: ns, Storage: storage},
			Chart:    &chartv2.Chart{Metadata: &chartv2.Metadata{Name: chart, Version: "1.0.0"}},
		}}}
	}
	base := side("web", "apps", "apps", "webapp", "")
	for _, tc := range []struct {
		name string
		head *treeSide
		want string
	}{
		{"the same", side("web", "apps", "apps", "webapp", ""), ""},
		{"storage namespace", side("web", "apps", "flux-system", "webapp", ""), "storage namespace apps → flux-system"},
		{"namespace", side("web", "web", "apps", "webapp", ""), "namespace apps → web"},
		{"release name", side("web-web", "apps", "apps", "webapp", ""), "release name web → web-web"},
		{"chart name, in place", side("web", "apps", "apps", "site", "InPlaceUpdate"), ""},
		{"chart name, reinstall", side("web", "apps", "apps", "site", "Reinstall"), "chart webapp → site, upgrade.chartNameChangeStrategy Reinstall"},
	} {
		if got := targetChange(base, tc.head); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
