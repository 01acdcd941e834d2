package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/history"
)

// classes are the divergence classes, one series each per release.
var classes = []compare.Class{compare.Differs, compare.ChartOnly, compare.ClusterOnly, compare.Shadows}

var (
	perRelease  = []string{"namespace", "release", "kind"}
	divergences = prometheus.NewDesc("helm_drift_divergences",
		"Rows of the last run that are drift, by class (DIFFERS, CHART-ONLY, CLUSTER-ONLY, SHADOWS), per release or HelmRelease.",
		append(perRelease, "class"), nil)
	pending = prometheus.NewDesc("helm_drift_pending_deletions",
		"Fields an upgrade would remove, per release or HelmRelease, in the last run (absent when it failed).", perRelease, nil)
	unmeasured = prometheus.NewDesc("helm_drift_unmeasured_objects",
		"Objects of the release or HelmRelease that could not be measured in the last run (absent when it failed) (a forbidden or failing kind).", perRelease, nil)
	failed = prometheus.NewDesc("helm_drift_measurement_failed",
		"1 when the release or HelmRelease could not be measured at all in the last run (absent when it failed) (its chart not found, its storage unreadable); it then has no other series.", perRelease, nil)
	compared = prometheus.NewDesc("helm_drift_compared_fields",
		"Fields compared, per release or HelmRelease, in the last run (absent when it failed).", perRelease, nil)
	nextReconcile = prometheus.NewDesc("helm_drift_next_reconcile",
		"1 for what helm-controller's next reconcile of the HelmRelease will do (install, upgrade, drift correction, nothing).",
		append(perRelease, "action"), nil)
	lastSuccess = prometheus.NewDesc("helm_drift_last_success_timestamp_seconds",
		"When the last successful run began, in seconds since 1970 (absent before the first).", nil, nil)
	duration = prometheus.NewDesc("helm_drift_run_duration_seconds",
		"How long the last run took, successful or not.", nil, nil)
	oldestDivergence = prometheus.NewDesc("helm_drift_oldest_divergence_timestamp_seconds",
		"When the release's or HelmRelease's oldest open divergence was first seen, in seconds since 1970 (absent: none open); time() minus it is how long it has drifted.", perRelease, nil)
	divergenceChanges = prometheus.NewDesc("helm_drift_divergence_changes_total",
		"Divergences a run saw appear (opened), go (resolved) or come back after going (returned), since serve started.", []string{"change"}, nil)
	runs = prometheus.NewDesc("helm_drift_runs_total",
		"Runs ended, by result: success (the cluster was read and every release listed) or failed.", []string{"result"}, nil)
)

// figures are what one point in time exports: the last run's record (nil when it failed: old
// figures are not exported as fresh), when the last success began, and the run counters.
// They are swapped whole, so a scrape never sees half a run.
type figures struct {
	run          *record
	lastSuccess  float64 // 0: none yet
	lastDuration float64
	succeeded    float64
	failed       float64
	// opened, resolved and returned count the divergences' changes since serve started.
	opened, resolved, returned float64
}

// collector exports the current figures.
type collector struct{ s *Server }

// Describe sends every metric's description.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{divergences, pending, unmeasured, failed, compared, nextReconcile, lastSuccess, duration, runs, oldestDivergence, divergenceChanges} {
		ch <- d
	}
}

// Collect sends the figures of the last runs. No label carries a field path, a value, an
// object below the release, or anything read from a Secret: the series of a release are its
// four classes, pending deletions, unmeasured objects and compared fields (and, for a
// HelmRelease, its next reconcile): eight at most.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	f := c.s.figures.Load()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var rows []diff.SummaryRow
	if f.run != nil {
		rows = f.run.rows
	}
	for _, r := range rows {
		kind, ns, name := r.Identity()
		if r.Error != "" {
			gauge(failed, 1, ns, name, kind)
			continue
		}
		for _, class := range classes {
			gauge(divergences, float64(r.Counts[class]), ns, name, kind, string(class))
		}
		gauge(pending, float64(r.PendingDeletions), ns, name, kind)
		gauge(unmeasured, float64(r.Unmeasured), ns, name, kind)
		gauge(compared, float64(r.Compared), ns, name, kind)
		if kind == diff.KindHelmRelease && r.Next != "" {
			gauge(nextReconcile, 1, ns, name, kind, r.Next)
		}
		if r.Since != nil {
			gauge(oldestDivergence, float64(r.Since.Unix()), ns, name, kind)
		}
	}
	if f.lastSuccess > 0 {
		gauge(lastSuccess, f.lastSuccess)
	}
	gauge(duration, f.lastDuration)
	ch <- prometheus.MustNewConstMetric(runs, prometheus.CounterValue, f.succeeded, "success")
	ch <- prometheus.MustNewConstMetric(runs, prometheus.CounterValue, f.failed, "failed")
	for _, c := range []struct {
		name string
		v    float64
	}{{history.Opened, f.opened}, {history.Resolved, f.resolved}, {history.Returned, f.returned}} {
		ch <- prometheus.MustNewConstMetric(divergenceChanges, prometheus.CounterValue, c.v, c.name)
	}
}
