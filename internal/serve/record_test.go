package serve

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
)

// TestRecorder: a run's record keeps each measurement's divergences by identity, object and
// path, and with the console its section (rendered as it is measured); the console's table is
// derived from the rows. A release a HelmRelease manages, measured as a release, is a release.
func TestRecorder(t *testing.T) {
	reports := []*diff.Report{
		{Release: "web", Namespace: "shop", HelmRelease: "flux-system/web", Counts: map[compare.Class]int{compare.Differs: 1}, Prune: []diff.Prune{},
			Objects: []diff.Object{{Object: "Deployment.apps shop/web", Rows: []diff.Row{{Class: compare.Differs, Path: "spec.replicas"}}}}},
		{Release: "api", Namespace: "apps", HelmRelease: "flux-system/api", Next: &flux.Next{Action: flux.NextNothing}, Counts: map[compare.Class]int{},
			Objects: []diff.Object{}, Prune: []diff.Prune{}},
	}
	for _, console := range []bool{true, false} {
		r := newRecorder(console)
		var rows []diff.SummaryRow
		for _, rep := range reports {
			row := diff.Summarise(rep)
			row.Report = rep
			r.add(row)
			row.Report = nil
			rows = append(rows, row)
		}
		rec := r.finish(rows, diff.Stamp{CheckedAt: time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)})
		want := map[string][]divergence{
			"release/shop/web":            {{Object: "Deployment.apps shop/web", Path: "spec.replicas", Class: compare.Differs}},
			"helmrelease/flux-system/api": nil,
		}
		if d := cmp.Diff(want, rec.divergences); d != "" {
			t.Errorf("console %v: divergences (-want +got):\n%s", console, d)
		}
		if got := len(rec.sections); got != map[bool]int{true: 2, false: 0}[console] {
			t.Errorf("console %v: %d sections", console, got)
		}
		cr := rec.consoleRows()
		if len(cr) != 2 || cr[0].Link != "/release/shop/web" || cr[1].Link != "/helmrelease/flux-system/api" || cr[0].Measured != "2026-12-05T14:00:00Z" {
			t.Errorf("console %v: table rows %+v", console, cr)
		}
	}
}
