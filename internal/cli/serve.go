package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/serve"
)

const serveUsage = `Measures every release and HelmRelease of the cluster, again and again, and serves the
figures to Prometheus: drift measured all the time, and an alarm when nothing measures.

Every --interval (the first run at once; a run never overlaps the next) it runs what
"diff release -A" and "diff helmrelease -A" run, offline normalisation by default (get and
list RBAC only), and serves on --listen:
  /metrics   helm_drift_* per release and HelmRelease (no label carries a field, a value or
             anything read from a Secret), and per run
  /healthz   200 while the process runs
  /readyz    200 once the last run succeeded; 503 and why, before the first or after a failure
  /report    the last successful run's summary, as "diff -o json" prints it
A failed run is counted and logged, never a crash. Logs are JSON lines on stderr. SIGTERM or
SIGINT cancels the run in progress and drains the server within --grace. Without --kubeconfig
and $KUBECONFIG it uses the in-cluster service account.

Usage:
  helm drift serve [--interval 10m] [--listen :9477] [flags]

The metrics, the chart, the alerts: ` + docsURL + `serve.md
`

// serveOptions are the flags of serve.
type serveOptions struct {
	interval  time.Duration
	listen    string
	grace     time.Duration
	normalize diff.Mode
	workers   int
	kube      kubeOptions
}

// BindFlags registers serve's flags on fs.
func (o *serveOptions) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.interval, "interval", 10*time.Minute, "from one run's start to the next's (at least 5s)")
	fs.StringVar(&o.listen, "listen", ":9477", "the address the HTTP server listens on (/metrics, /healthz, /readyz, /report)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on SIGTERM, how long the server may take to drain")
	fs.StringVar((*string)(&o.normalize), "normalize", string(diff.Offline), "how API-server defaults are told from drift: offline (get/list RBAC only), server or auto (see diff --help)")
	fs.IntVar(&o.workers, "concurrency", 8, "requests in flight at most (1-64), as diff takes it")
	o.kube.BindFlags(fs)
}

func (o *serveOptions) validate() error {
	switch {
	case o.interval < 5*time.Second:
		return fmt.Errorf("--interval %s: want at least 5s", o.interval)
	case o.grace <= 0:
		return fmt.Errorf("--grace %s: want a positive duration", o.grace)
	case o.normalize != diff.Offline && o.normalize != diff.Server && o.normalize != diff.Auto:
		return fmt.Errorf("--normalize %q: want offline, server or auto", o.normalize)
	case o.workers < 1 || o.workers > 64:
		return fmt.Errorf("--concurrency %d: want 1 to 64", o.workers)
	}
	return nil
}

func runServe(args []string, _ io.Reader, out, errOut io.Writer) int {
	var o serveOptions
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, serveUsage, args, out, errOut); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "helm-drift serve: unexpected argument %q\n", fs.Arg(0))
		return ExitError
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(errOut, "helm-drift serve: %v\nRun \"helm drift serve --help\" for the usage.\n", err)
		return ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := &serve.Server{Kube: o.kube.options(), Measure: action.Measure{Options: diff.Options{Normalize: o.normalize, Workers: o.workers}},
		Interval: o.interval, Listen: o.listen, Grace: o.grace, Log: slog.New(slog.NewJSONHandler(errOut, nil))}
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(errOut, "helm-drift serve: %v\n", err)
		return ExitError
	}
	return ExitOK
}
