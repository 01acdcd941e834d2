// Package serve is helm drift serve: every release and HelmRelease of a cluster measured again
// and again, the figures served as Prometheus metrics, the last summary as JSON, and probes.
package serve

import (
	"context"
	"crypto/tls"
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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/history"
	"github.com/helm-drift/helm-drift/internal/notify"
	"github.com/helm-drift/helm-drift/internal/output"
	"github.com/helm-drift/helm-drift/internal/reportstore"
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
	// Namespaces confine the runs to these namespaces (their releases and HelmReleases, read
	// with namespaced grants); none: every namespace.
	Namespaces []string
	// Guard admits the requests of every endpoint but the probes; nil: anyone (--auth none).
	Guard *Guard
	// TLS encrypts the server; nil: plain HTTP (--tls=false).
	TLS *TLS
	// NoConsole turns the console off: the runs keep neither sides nor pages (--console=false),
	// and / answers 404.
	NoConsole bool
	// ExternalURL is where people reach the console (a release page shows its address under
	// it, to paste into an issue); empty: none shown.
	ExternalURL string
	// Grace bounds the shutdown: a run in progress is cancelled, the HTTP server drained.
	Grace time.Duration
	// Log receives structured lines (JSON in the CLI).
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// History remembers every divergence across runs (nil: Run makes an empty one).
	History *history.History
	// OpenReports keeps the history in OpenReports Reports in the cluster, read back after a
	// restart (--openreports); without their CRD or the grants, in memory only.
	OpenReports bool
	// Notifier tells each drift that appears and each that is gone (nil: the log only).
	Notifier *notify.Notifier
	// NotifyEvents adds Kubernetes Events to the Notifier's sinks (--notify-events).
	NotifyEvents bool

	store    *reportstore.Store
	loaded   bool // the stored history was read (or there is none to read)
	restored bool // and it held something: the first run notifies as any other

	figures atomic.Pointer[figures]
	// last is the last successful run's record: /report and the console are derived from
	// it (the metrics from the figures, which hold it while it is the last run).
	last  atomic.Pointer[record]
	mu    sync.Mutex
	ready error // nil once the last run succeeded; why not, else
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
	if s.History == nil {
		s.History = &history.History{}
	}
	if s.NotifyEvents {
		cfg, err := action.NewConfiguration(s.Kube, nil)
		var kc kubernetes.Interface
		if err == nil {
			kc, err = kubernetes.NewForConfig(cfg.RESTConfig())
		}
		if err != nil {
			return fmt.Errorf("--notify-events: %w", err)
		}
		if s.Notifier == nil {
			s.Notifier = &notify.Notifier{ConsoleURL: s.ExternalURL}
		}
		s.Notifier.Sinks = append(s.Notifier.Sinks, &notify.Events{Client: kc})
	}
	s.loaded = !s.OpenReports
	if s.OpenReports {
		cfg, err := action.NewConfiguration(s.Kube, nil)
		if err == nil {
			var dyn dynamic.Interface
			if dyn, err = dynamic.NewForConfig(cfg.RESTConfig()); err == nil {
				s.store = &reportstore.Store{Client: dyn, Namespaces: s.Namespaces}
			}
		}
		if err != nil {
			s.Log.Warn("the history is kept in memory only: "+err.Error(), "fix", "check --kubeconfig")
			s.loaded = true
		}
	}
	s.figures.Store(&figures{})
	s.ready = errNoRun
	security := []any{"tls", "off"}
	var tlsConfig *tls.Config
	if s.TLS != nil {
		var err error
		if tlsConfig, security, err = s.TLS.config(ctx, s.Log); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.Listen, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig,
		ErrorLog: slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	auth := "kubernetes"
	if s.Guard == nil {
		auth = "none"
		s.Log.Warn("--auth none: anyone who reaches " + ln.Addr().String() + " reads /metrics, /report and the console (every release's drift); use it on the loopback only")
	}
	namespaces := "all"
	if len(s.Namespaces) > 0 {
		namespaces = strings.Join(s.Namespaces, ",")
	}
	s.Log.Info("serving", append([]any{"listen", ln.Addr().String(), "interval", s.Interval.String(), "normalize", s.Measure.Normalize,
		"auth", auth, "namespaces", namespaces}, security...)...)

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
	rec, unmeasured, requests, err := s.measure(ctx, start)
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
		s.setReady(fmt.Errorf("the last run, at %s, failed: %w", start.UTC().Format(time.RFC3339), err))
		s.Log.Error("run failed", "error", err.Error(), "duration_seconds", took.Seconds(), "runs_failed", f.failed, "requests", requests)
		return
	}
	f.opened, f.resolved, f.returned = old.opened, old.resolved, old.returned
	s.loadHistory(ctx)
	changes := rec.remember(s.History, start)
	first := f.succeeded == 0 && !s.restored
	s.logChanges(changes, first)
	s.notify(ctx, rec, changes, first)
	s.storeHistory(ctx, rec)
	for _, c := range changes {
		switch c.What {
		case history.Opened:
			f.opened++
		case history.Resolved:
			f.resolved++
		case history.Returned:
			f.returned++
		}
	}
	f.run, f.lastSuccess = rec, float64(start.Unix())
	f.succeeded++
	s.last.Store(rec)
	s.figures.Store(f)
	s.setReady(nil)
	divergences, unmeasuredObjects, failedRows := 0, 0, 0
	for _, r := range rec.rows {
		divergences += r.Divergences
		unmeasuredObjects += r.Unmeasured
		if r.Error != "" {
			failedRows++
		}
	}
	for _, u := range unmeasured {
		// "NAMESPACE/RELEASE: Kind name: why" (a kind serve may not read: its grants).
		s.Log.Warn("object not measured", "object", u)
	}
	s.Log.Info("run finished", "duration_seconds", took.Seconds(), "measured", len(rec.rows), "divergences", divergences,
		"unmeasured_objects", unmeasuredObjects, "unmeasurable", failedRows, "context", rec.stamp.Context, "server", rec.stamp.Server, "requests", requests)
}

func (s *Server) setReady(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = err
}

// measure runs diff release -A and diff helmrelease -A (with Namespaces, diff release and
// diff helmrelease in each) on a new connection (a restarted API server, new CRDs and RBAC are
// seen the next run) into the run's record, one summary row each, releases first; requests
// counts what the run asked of the API server. A namespace whose releases or HelmReleases may
// not be listed is one row with the error (and one line in the log), not a failed run.
func (s *Server) measure(ctx context.Context, start time.Time) (rec *record, unmeasured []string, requests string, err error) {
	rows, unmeasured, stamp, r, requests, err := s.measureRows(ctx, start)
	if err != nil {
		return nil, nil, requests, err
	}
	if r.failed != nil {
		s.Log.Error("rendering the console", "error", r.failed.Error())
	}
	return r.finish(rows, stamp), unmeasured, requests, nil
}

// measureRows measures (see measure), each row given to the recorder as it is measured.
func (s *Server) measureRows(ctx context.Context, start time.Time) (rows []diff.SummaryRow, unmeasured []string, stamp diff.Stamp, rec *recorder, requests string, err error) {
	opts := s.Kube
	opts.Stop = ctx // SIGTERM stops every request of the run, the Helm SDKs' too
	rec = newRecorder(!s.NoConsole)
	cfg, err := action.NewConfiguration(opts, nil)
	if err != nil {
		return nil, nil, stamp, rec, "", err
	}
	defer func() { requests = cfg.Counts.String() }()
	if err = cfg.Connect(ctx); err != nil {
		return nil, nil, stamp, rec, "", err
	}
	stamp = diff.NewStamp(start, cfg.Context(), cfg.Server())
	// Each release is recorded as it is measured (its divergences; with the console its page,
	// rendered then), its report and two sides then let go.
	m := s.Measure
	if !s.NoConsole {
		m.Views, m.Suggest = true, true
	}
	m.Each = rec.add
	if len(s.Namespaces) == 0 {
		rel, err := (&action.DiffRelease{Config: cfg, Measure: m}).RunAll(ctx, true)
		if err != nil {
			return nil, nil, stamp, rec, "", err
		}
		rows, unmeasured = rel.Rows, rel.Unmeasured
		hrs, err := (&action.DiffHelmRelease{Config: cfg, Measure: m}).RunAllIn(ctx, "")
		switch {
		case notServed(err):
			// No Flux here: no HelmReleases to measure.
		case err != nil:
			return nil, nil, stamp, rec, "", err
		default:
			rows = append(rows, hrs.Rows...) // sorted by HelmRelease
			unmeasured = append(unmeasured, hrs.Unmeasured...)
		}
		return rows, unmeasured, stamp, rec, "", nil
	}
	var hrRows []diff.SummaryRow
	for _, ns := range s.Namespaces {
		rel, err := (&action.DiffRelease{Config: cfg, Measure: m, Namespace: ns}).RunAll(ctx, false)
		switch {
		case ctx.Err() != nil:
			return nil, nil, stamp, rec, "", ctx.Err()
		case err != nil:
			s.Log.Error("namespace not measured: its Helm releases could not be listed", "namespace", ns, "error", err.Error(),
				"fix", "grant get and list in it (the chart's serve.namespaces makes a Role and RoleBinding there), or leave it out of --namespaces")
			rows = append(rows, diff.SummaryRow{Namespace: ns, Error: err.Error()})
		default:
			rows = append(rows, rel.Rows...)
			unmeasured = append(unmeasured, rel.Unmeasured...)
		}
		hrs, err := (&action.DiffHelmRelease{Config: cfg, Measure: m}).RunAllIn(ctx, ns)
		switch {
		case ctx.Err() != nil:
			return nil, nil, stamp, rec, "", ctx.Err()
		case notServed(err):
		case err != nil:
			s.Log.Error("namespace not measured: its HelmReleases could not be listed", "namespace", ns, "error", err.Error(),
				"fix", "grant get and list in it (the chart's serve.namespaces makes a Role and RoleBinding there), or leave it out of --namespaces")
			hrRows = append(hrRows, diff.SummaryRow{HelmRelease: ns + "/", Error: err.Error()})
		default:
			hrRows = append(hrRows, hrs.Rows...)
			unmeasured = append(unmeasured, hrs.Unmeasured...)
		}
	}
	return append(rows, hrRows...), unmeasured, stamp, rec, "", nil
}

// notServed reports that the cluster does not serve the HelmRelease kind (Flux is not there).
func notServed(err error) bool {
	var kind *meta.NoKindMatchError
	var resource *meta.NoResourceMatchError
	return errors.As(err, &kind) || errors.As(err, &resource)
}

// Handler serves /metrics, /report, the console (/, /release/NS/NAME, /helmrelease/NS/NAME),
// /healthz and /readyz: all but the probes (the kubelet has no token) and the sign-in page
// behind the Guard.
func (s *Server) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s})
	mux := http.NewServeMux()
	guard := func(h http.Handler) http.Handler {
		if s.Guard == nil {
			return h
		}
		return s.Guard.Wrap(h)
	}
	mux.Handle("GET /metrics", guard(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	if !s.NoConsole {
		mux.Handle("GET /{$}", s.page(s.consolePage))
		mux.Handle("GET /"+diff.KindRelease+"/{namespace}/{name}", s.page(s.releasePage(diff.KindRelease)))
		mux.Handle("GET /"+diff.KindHelmRelease+"/{namespace}/{name}", s.page(s.releasePage(diff.KindHelmRelease)))
		mux.HandleFunc("GET /signin", s.signinPage)
		mux.HandleFunc("POST /signin", s.signin)
		mux.HandleFunc("POST /signout", s.signout)
	}
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
	mux.Handle("GET /report", guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rec := s.last.Load()
		if rec == nil {
			http.Error(w, "no run has succeeded yet", http.StatusServiceUnavailable)
			return
		}
		// The last successful run's summary, as diff -o json prints it.
		w.Header().Set("Content-Type", "application/json")
		if err := output.WriteSummary(w, rec.rows, []diff.ClusterRun{{Stamp: rec.stamp}}, "json", output.Options{}); err != nil {
			s.Log.Error("writing the report", "error", err.Error())
		}
	})))
	return mux
}
