package action

import (
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestUnservedNotes: up to five objects in unserved versions are a note each; more are one note
// naming the first five and counting the rest.
func TestUnservedNotes(t *testing.T) {
	var u []string
	for i := range 7 {
		u = append(u, fmt.Sprintf("HelmRelease apps/a%d (Kustomization flux-system/apps) is helm.toolkit.fluxcd.io/v2beta1, which Flux's current controllers no longer serve: applying it fails there; move it to helm.toolkit.fluxcd.io/v2", i))
	}
	if got := unservedNotes(u[:5]); len(got) != 5 {
		t.Errorf("five: %d notes, want 5", len(got))
	}
	got := unservedNotes(u)
	if len(got) != 1 || !strings.HasPrefix(got[0], "7 objects are in API versions") || !strings.Contains(got[0], "HelmRelease apps/a4 (Kustomization flux-system/apps) is helm.toolkit.fluxcd.io/v2beta1, and 2 more") || strings.Contains(got[0], "apps/a5") {
		t.Errorf("seven: %q", got)
	}
}

// TestStaleChart: source-controller keeps serving the base's chart when its version stays and
// the HelmChart's spec (spec.chart.spec, the interval) does not change, under ChartVersion.
func TestStaleChart(t *testing.T) {
	side := func(version, strategy, interval string, valuesFiles ...string) *treeSide {
		hr := &v2.HelmRelease{}
		hr.Spec.Chart = &v2.HelmChartTemplate{Spec: v2.HelmChartTemplateSpec{Chart: "./charts/app", ReconcileStrategy: strategy, ValuesFiles: valuesFiles}}
		hr.Spec.Interval.Duration, _ = time.ParseDuration(interval)
		return &treeSide{hr: hr, built: &helmcontroller.Built{Rendered: &helmcontroller.Rendered{
			Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "app", Version: version}},
		}}}
	}
	base := side("1.0.0", "", "1h")
	for _, tc := range []struct {
		name string
		head *treeSide
		want bool
	}{
		{"the same version and spec", side("1.0.0", "", "1h"), true},
		{"a new version", side("1.1.0", "", "1h"), false},
		{"Revision", side("1.0.0", "Revision", "1h"), false},
		{"a new interval", side("1.0.0", "", "5m"), false},
		{"new valuesFiles", side("1.0.0", "", "1h", "values-prod.yaml"), false},
	} {
		if got := staleChart(base, tc.head); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
