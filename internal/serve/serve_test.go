package serve

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/output"
)

// TestCollect: a release has its four classes, pending deletions, unmeasured objects and
// compared fields; a HelmRelease also its next reconcile; one that could not be measured only
// measurement_failed; the run counters are always there, the last success once there is one.
func TestCollect(t *testing.T) {
	s := &Server{}
	s.figures.Store(&figures{run: &record{rows: []diff.SummaryRow{
		{Release: "web", Namespace: "shop", Divergences: 3, Compared: 40, PendingDeletions: 1, Unmeasured: 2,
			Counts: map[compare.Class]int{compare.Differs: 2, compare.ClusterOnly: 1}},
		{HelmRelease: "flux-system/api", Next: "upgrade", Release: "api", Namespace: "apps", Compared: 12, Counts: map[compare.Class]int{}},
		{Release: "db", Namespace: "data", Error: "listing its objects: forbidden"},
	}}, lastSuccess: 1796179860, lastDuration: 1.5, succeeded: 3, failed: 1})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{s})
	want := `
# HELP helm_drift_divergences Rows of the last run that are drift, by class (DIFFERS, CHART-ONLY, CLUSTER-ONLY, SHADOWS), per release or HelmRelease.
# TYPE helm_drift_divergences gauge
helm_drift_divergences{class="CHART-ONLY",kind="helmrelease",namespace="flux-system",release="api"} 0
helm_drift_divergences{class="CHART-ONLY",kind="release",namespace="shop",release="web"} 0
helm_drift_divergences{class="CLUSTER-ONLY",kind="helmrelease",namespace="flux-system",release="api"} 0
helm_drift_divergences{class="CLUSTER-ONLY",kind="release",namespace="shop",release="web"} 1
helm_drift_divergences{class="DIFFERS",kind="helmrelease",namespace="flux-system",release="api"} 0
helm_drift_divergences{class="DIFFERS",kind="release",namespace="shop",release="web"} 2
helm_drift_divergences{class="SHADOWS",kind="helmrelease",namespace="flux-system",release="api"} 0
helm_drift_divergences{class="SHADOWS",kind="release",namespace="shop",release="web"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "helm_drift_divergences"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"helm_drift_pending_deletions": 2, "helm_drift_unmeasured_objects": 2, "helm_drift_compared_fields": 2,
		"helm_drift_measurement_failed": 1, "helm_drift_next_reconcile": 1, "helm_drift_runs_total": 2, "helm_drift_last_success_timestamp_seconds": 1} {
		if got := testutil.CollectAndCount(collector{s}, name); got != n {
			t.Errorf("%s: %d series, want %d", name, got, n)
		}
	}
	// Before any success: no last-success series (an alert reads its absence).
	s.figures.Store(&figures{failed: 2})
	if got := testutil.CollectAndCount(collector{s}, "helm_drift_last_success_timestamp_seconds"); got != 0 {
		t.Errorf("last success exported before any: %d series", got)
	}
}

// TestProbes: /readyz says why it is not ready, /report serves the last success's summary.
func TestProbes(t *testing.T) {
	s := &Server{}
	s.figures.Store(&figures{})
	s.ready = errNoRun
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "first run") {
		t.Errorf("/readyz before a run: %d %s", code, body)
	}
	if code, _ := get("/report"); code != 503 {
		t.Errorf("/report before a run: %d", code)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	at := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	s.last.Store(&record{rows: []diff.SummaryRow{{Release: "web", Namespace: "shop", Revision: 2, Compared: 40, Counts: map[compare.Class]int{}}},
		stamp: diff.Stamp{CheckedAt: at, Context: "testenv", Server: "https://127.0.0.1:6443"}})
	s.setReady(nil)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz after a success: %d", code)
	}
	s.setReady(errors.New("the last run failed: connection refused"))
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "connection refused") {
		t.Errorf("/readyz after a failure: %d %s", code, body)
	}
	// /report is the record as diff release -A -o json prints it.
	var want strings.Builder
	rec := s.last.Load()
	if err := output.WriteSummary(&want, rec.rows, []diff.ClusterRun{{Stamp: rec.stamp}}, "json", output.Options{}); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/report"); code != 200 || body != want.String() || !strings.Contains(body, `"release": "web"`) {
		t.Errorf("/report after a failure keeps the last success's: %d %s", code, body)
	}
}
