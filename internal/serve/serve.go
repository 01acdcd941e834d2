// Package serve is helm drift serve: every release and HelmRelease of a cluster measured again
// and again, the figures served as Prometheus metrics, the last summary as JSON, and probes.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/output"
)

// Server measures a cluster every Interval and serves what it found.
type Server struct {
	// Kube chooses the cluster (a kubeconfig, else the in-cluster service account).
	Kube action.KubeOptions
	// Measure is how releases are compared (offline normalisation needs get/list only).
	Measure action.Measure
	// Interval is the time from one run's start to the next's (a run never overlaps the next:
	// one that takes longer is followed at once).
	Interval time.Duration
	// Listen is the address of the HTTP server (/metrics, /healthz, /readyz, /report).
	Listen string
	// Grace bounds the shutdown: a run in progress is cancelled, the HTTP server drained.
	Grace time.Duration
	// Log receives structured lines (JSON in the CLI).
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	figures atomic.Pointer[figures]
	mu      sync.Mutex
	report  []byte // the last successful run's summary, as diff -o json prints it
	ready   error  // nil once the last run succeeded; why not, else
}

// errNoRun is why the server is not ready before its first run ends.
var errNoRun = errors.New("the first run has not ended yet")

// Run serves until ctx is cancelled (SIGTERM in the CLI), measuring at once and then every
// Interval. It returns an error only when it cannot listen.
func (s *Server) Run(ctx context.Context) error {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.figures.Store(&figures{})
	s.ready = errNoRun
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.Listen, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.Log.Info("serving", "listen", ln.Addr().String(), "interval", s.Interval.String(), "normalize", s.Measure.Normalize)

	next := time.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			s.Log.Info("shutting down", "reason", context.Cause(ctx).Error())
			shut, cancel := context.WithTimeout(context.Background(), s.Grace)
			defer cancel()
			return srv.Shutdown(shut)
		case err := <-served:
			return fmt.Errorf("HTTP server: %w", err)
		case <-next.C:
			start := s.Now()
			s.runOnce(ctx, start)
			if ctx.Err() == nil {
				next.Reset(max(0, s.Interval-s.Now().Sub(start)))
			}
		}
	}
}

// runOnce measures the cluster once and swaps in the figures: the rows on success; on failure
// none (the old ones would read as fresh), the last success's time kept.
func (s *Server) runOnce(ctx context.Context, start time.Time) {
	s.Log.Info("run started")
	rows, stamp, requests, err := s.measure(ctx, start)
	took := s.Now().Sub(start)
	if ctx.Err() != nil {
		s.Log.Info("run interrupted by shutdown", "duration_seconds", took.Seconds())
		return
	}
	old := s.figures.Load()
	f := &figures{lastSuccess: old.lastSuccess, lastDuration: took.Seconds(), succeeded: old.succeeded, failed: old.failed}
	if err != nil {
		f.failed++
		s.figures.Store(f)
		s.setReady(fmt.Errorf("the last run, at %s, failed: %w", start.UTC().Format(time.RFC3339), err), nil)
		s.Log.Error("run failed", "error", err.Error(), "duration_seconds", took.Seconds(), "runs_failed", f.failed, "requests", requests)
		return
	}
	f.rows, f.lastSuccess = rows, float64(start.Unix())
	f.succeeded++
	var report strings.Builder
	if err := output.WriteSummary(&report, rows, []diff.ClusterRun{{Stamp: stamp}}, "json", output.Options{}); err != nil {
		s.Log.Error("writing the report", "error", err.Error())
	}
	s.figures.Store(f)
	s.setReady(nil, []byte(report.String()))
	divergences, unmeasured, failedRows := 0, 0, 0
	for _, r := range rows {
		divergences += r.Divergences
		unmeasured += r.Unmeasured
		if r.Error != "" {
			failedRows++
		}
	}
	s.Log.Info("run finished", "duration_seconds", took.Seconds(), "measured", len(rows), "divergences", divergences,
		"unmeasured_objects", unmeasured, "unmeasurable", failedRows, "context", stamp.Context, "server", stamp.Server, "requests", requests)
}

func (s *Server) setReady(err error, report []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = err
	if report != nil {
		s.report = report
	}
}

// measure runs diff release -A and diff helmrelease -A on a new connection (a restarted API
// server, new CRDs and RBAC are seen the next run), one summary row each, releases first;
// requests counts what the run asked of the API server.
func (s *Server) measure(ctx context.Context, start time.Time) (rows []diff.SummaryRow, stamp diff.Stamp, requests string, err error) {
	opts := s.Kube
	opts.Stop = ctx // SIGTERM stops every request of the run, the Helm SDKs' too
	cfg, err := action.NewConfiguration(opts, nil)
	if err != nil {
		return nil, stamp, "", err
	}
	defer func() { requests = cfg.Counts.String() }()
	if err = cfg.Connect(ctx); err != nil {
		return nil, stamp, "", err
	}
	stamp = diff.NewStamp(start, cfg.Context(), cfg.Server())
	rel, err := (&action.DiffRelease{Config: cfg, Measure: s.Measure}).RunAll(ctx, true)
	if err != nil {
		return nil, stamp, "", err
	}
	rows = rel.Rows
	hrs, err := (&action.DiffHelmRelease{Config: cfg, Measure: s.Measure}).RunAllIn(ctx, "")
	switch {
	case notServed(err):
		// No Flux here: no HelmReleases to measure.
	case err != nil:
		return nil, stamp, "", err
	default:
		rows = append(rows, hrs.Rows...) // sorted by HelmRelease
	}
	return rows, stamp, "", nil
}

// notServed reports that the cluster does not serve the HelmRelease kind (Flux is not there).
func notServed(err error) bool {
	var kind *meta.NoKindMatchError
	var resource *meta.NoResourceMatchError
	return errors.As(err, &kind) || errors.As(err, &resource)
}

// Handler serves /metrics, /healthz, /readyz and /report.
func (s *Server) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		err := s.ready
		s.mu.Unlock()
		if err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		report := s.report
		s.mu.Unlock()
		if report == nil {
			http.Error(w, "no run has succeeded yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(report)
	})
	return mux
}
