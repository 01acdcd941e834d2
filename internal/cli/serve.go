package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/notify"
	"github.com/helm-drift/helm-drift/internal/serve"
)

const serveUsage = `Measures every release and HelmRelease of the cluster, again and again, and serves the
figures to Prometheus: drift measured all the time, and an alarm when nothing measures.

Every --interval (the first run at once; a run never overlaps the next) it runs what
"diff release -A" and "diff helmrelease -A" run (with --namespaces, in those namespaces only),
offline normalisation by default (get and list RBAC only), and serves on --listen:
  /metrics   helm_drift_* per release and HelmRelease (no label carries a field, a value or
             anything read from a Secret), and per run
  /report    the last successful run's summary, as "diff -o json" prints it, with each
             divergence's history (since, last seen, resolved, returns, moved by)
  /          the drift console: every release and HelmRelease in one table, and a page
             each (/release/NS/NAME, /helmrelease/NS/NAME) with its rows by object and
             their unified diffs, as "diff -o html" prints them; a browser signs in at
             /signin with a token, kept in an HttpOnly cookie for the session
  /healthz   200 while the process runs
  /readyz    200 once the last run succeeded; 503 and why, before the first or after a failure
Each divergence that appears, goes or comes back is one log line, never one per run. A failed
run is counted and logged, never a crash. Logs are JSON lines on stderr. SIGTERM or
SIGINT cancels the run in progress and drains the server within --grace. Without --kubeconfig
and $KUBECONFIG it uses the in-cluster service account.

Who may read (--auth kubernetes, the default): every path but the probes and /signin answers
only a request whose bearer token (or sign-in cookie) the API server accepts (a TokenReview)
for a user it allows "get" on that path (a SubjectAccessReview of the non-resource URL): bind
a scraper to a ClusterRole with nonResourceURLs ["/metrics", "/report"], a person to one with
["/", "/release/*", "/helmrelease/*"], verbs ["get"] (the chart makes both).
401 without such a token, 403 without the grant; both answers are cached for --auth-cache-ttl.
serve's own identity needs create on tokenreviews and subjectaccessreviews. The probes stay
open. --auth none admits anyone: for a run on the loopback only (it warns at start).

Encryption (--tls, the default): HTTPS with the certificate of --tls-cert-file and
--tls-key-file (a mounted Secret, e.g. cert-manager's: read again when it changes, no restart),
or without them a self-signed certificate made at start (its CA's SHA-256 in the log).
--tls=false serves plain HTTP.

Usage:
  helm drift serve [--interval 10m] [--listen :9477] [--namespaces a,b] [flags]

The metrics, the console, the chart, the grants, the alerts: ` + docsURL + `serve.md
`

// serveOptions are the flags of serve.
type serveOptions struct {
	interval   time.Duration
	listen     string
	grace      time.Duration
	normalize  diff.Mode
	workers    int
	namespaces []string
	auth       string
	authTTL    time.Duration
	scraper    string
	viewer     string
	tls        bool
	certFile   string
	keyFile    string
	tlsNames   []string
	external   string
	console    bool
	reports    bool
	notifyFlux string
	webhook    string
	// alertmanager is --notify-alertmanager's URL.
	alertmanager string
	events       bool
	kube         kubeOptions
}

// BindFlags registers serve's flags on fs.
func (o *serveOptions) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.interval, "interval", 10*time.Minute, "from one run's start to the next's (at least 5s)")
	fs.StringVar(&o.listen, "listen", ":9477", "the address the HTTP server listens on (/metrics, /report, the console, /healthz, /readyz)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "on SIGTERM, how long the server may take to drain")
	fs.StringVar((*string)(&o.normalize), "normalize", string(diff.Offline), "how API-server defaults are told from drift: offline (get/list RBAC only), server or auto (see diff --help)")
	fs.IntVar(&o.workers, "concurrency", 8, "requests in flight at most (1-64), as diff takes it")
	fs.StringSliceVar(&o.namespaces, "namespaces", nil, "measure only the releases and HelmReleases of these namespaces (comma-separated), read with namespaced grants; default: every namespace")
	fs.StringVar(&o.auth, "auth", "kubernetes", "who may read /metrics, /report and the console: kubernetes (a token the API server accepts, of a user allowed get on the path) or none (anyone: the loopback only)")
	fs.DurationVar(&o.authTTL, "auth-cache-ttl", time.Minute, "how long a TokenReview's and a SubjectAccessReview's answer is kept (0-1h; a refusal at most 10s): a revoked grant is refused within it")
	fs.StringVar(&o.scraper, "scraper-role", "", "the ClusterRole that grants get on /metrics and /report, named in a 403's hint (the chart sets it)")
	fs.StringVar(&o.viewer, "viewer-role", "", "the ClusterRole that grants get on the console's pages, named in a 403's hint (the chart sets it)")
	fs.BoolVar(&o.tls, "tls", true, "serve HTTPS (--tls=false: plain HTTP)")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "the PEM certificate to serve, read again when it changes (with --tls-key-file); none: a self-signed one made at start")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file")
	fs.BoolVar(&o.reports, "openreports", true, "keep each divergence's history (since, returns, moved by) in an OpenReports Report (openreports.io/v1alpha1) per release, in its namespace, written when it changes and read back after a restart; without the CRD or the grants, in memory (one warning)")
	fs.StringVar(&o.notifyFlux, "notify-flux", "", "post a HelmRelease's DriftDetected and DriftResolved events to Flux's notification-controller at this URL (http://notification-controller.flux-system.svc.cluster.local./), as Flux's controllers post theirs: its Alerts and Providers carry them")
	fs.StringVar(&o.webhook, "notify-webhook", "", "post each DriftDetected and DriftResolved, of Helm releases and HelmReleases, as JSON to this URL")
	fs.StringVar(&o.alertmanager, "notify-alertmanager", "", "post each release's drift as an alert (HelmDriftDetected, labels kind, namespace, name) to the Alertmanager at this URL (http://alertmanager.monitoring:9093): firing while it lasts (re-sent every run), ended when it is gone")
	fs.BoolVar(&o.events, "notify-events", false, "record each DriftDetected and DriftResolved as a Kubernetes Event (events.k8s.io/v1) on the HelmRelease, or on a Helm release's namespace (needs create on events)")
	fs.BoolVar(&o.console, "console", true, "serve the drift console (/, /release/NS/NAME, /helmrelease/NS/NAME); --console=false keeps neither each object's sides nor the pages")
	fs.StringVar(&o.external, "external-url", "", "the address people reach the console at (https://drift.example.com): a release page shows its link under it")
	fs.StringSliceVar(&o.tlsNames, "tls-names", nil, "DNS names and IP addresses of the self-signed certificate beyond localhost, 127.0.0.1 and ::1 (comma-separated)")
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
	case o.auth != "kubernetes" && o.auth != "none":
		return fmt.Errorf("--auth %q: want kubernetes or none", o.auth)
	case o.authTTL < 0 || o.authTTL > time.Hour:
		return fmt.Errorf("--auth-cache-ttl %s: want 0 to 1h", o.authTTL)
	case (o.certFile == "") != (o.keyFile == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together: give both, or neither for a self-signed certificate")
	case !o.tls && (o.certFile != "" || len(o.tlsNames) > 0):
		return errors.New("--tls=false serves plain HTTP: drop --tls-cert-file, --tls-key-file and --tls-names, or --tls=false")
	}
	for flag, v := range map[string]string{"--notify-flux": o.notifyFlux, "--notify-webhook": o.webhook, "--notify-alertmanager": o.alertmanager} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s %q: want an absolute http or https URL", flag, v)
		}
	}
	if o.external != "" {
		if u, err := url.Parse(o.external); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--external-url %q: want an absolute http or https URL", o.external)
		}
	}
	for _, ns := range o.namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
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
	log := slog.New(slog.NewJSONHandler(errOut, nil))
	s := &serve.Server{Kube: o.kube.options(), Measure: action.Measure{Options: diff.Options{Normalize: o.normalize, Workers: o.workers}},
		Interval: o.interval, Listen: o.listen, Grace: o.grace, Log: log, Namespaces: o.namespaces, ExternalURL: o.external, NoConsole: !o.console, OpenReports: o.reports}
	if o.notifyFlux != "" || o.webhook != "" || o.alertmanager != "" {
		s.Notifier = &notify.Notifier{ConsoleURL: o.external}
		if o.notifyFlux != "" {
			s.Notifier.Sinks = append(s.Notifier.Sinks, &notify.Flux{URL: o.notifyFlux})
		}
		if o.webhook != "" {
			s.Notifier.Sinks = append(s.Notifier.Sinks, &notify.Webhook{URL: o.webhook})
		}
		if o.alertmanager != "" {
			// An alert holds three intervals unless re-sent: a serve that stops lets it end.
			s.Notifier.Sinks = append(s.Notifier.Sinks, &notify.Alertmanager{URL: o.alertmanager, Lasts: 3 * o.interval})
		}
	}
	s.NotifyEvents = o.events
	if o.tls {
		s.TLS = &serve.TLS{CertFile: o.certFile, KeyFile: o.keyFile, Names: o.tlsNames}
	}
	if o.auth == "kubernetes" {
		cfg, err := action.NewConfiguration(s.Kube, nil)
		if err == nil {
			s.Guard, err = serve.NewGuard(serve.GuardOptions{Config: cfg.RESTConfig(), TTL: o.authTTL, ScraperRole: o.scraper, ViewerRole: o.viewer, Log: log})
		}
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift serve: --auth kubernetes checks tokens with the API server: %v\n", err)
			return ExitError
		}
	}
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(errOut, "helm-drift serve: %v\n", err)
		return ExitError
	}
	return ExitOK
}
