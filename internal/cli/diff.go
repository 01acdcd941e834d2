package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	"helm.sh/helm/v3/pkg/cli/values"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/view"
)

// The values of --exit-code-on.
const (
	exitOnChange = "change"
	exitOnDrift  = "drift"
)

// Exit codes of diff.
const (
	// ExitDrift: diff found divergences.
	ExitDrift = 2
	// ExitUnmeasured: diff could not measure (an object or kind unreadable, the API unreachable).
	ExitUnmeasured = 3
)

const diffUsage = `Compares what a release should be with the live cluster, field by field.

Usage:
  helm drift diff upgrade RELEASE CHART [-f values.yaml] [--set k=v] [--version V] [flags]
  helm drift diff upgrade [diff flags] -- RELEASE CHART [the deploy's helm upgrade flags]
  helm drift diff release RELEASE [flags]
  helm drift diff release --all [-A] [flags]
  helm drift diff helmrelease NAME|NAMESPACE/NAME [flags]
  helm drift diff helmrelease --all [-A] [flags]
  helm drift diff helmrelease --file hr.yaml [--file ...] [NAME] [flags]
  helm drift diff release|helmrelease -A --kube-context A --kube-context B | --all-contexts

"diff upgrade": desired is what "helm upgrade RELEASE CHART" with the same flags would install,
rendered in-process with the Helm SDK (values reused as helm upgrade reuses them, the
post-renderer run, lookup calls answered by the cluster). "diff release": desired is the
manifest Helm stored for the release's latest revision (what helm-controller's drift
detection compares). "--all": every release in the namespace (-A: in all namespaces), one
summary row each; the run reads each kind in each namespace once, whatever the number of
releases, and on a terminal draws a progress line on stderr (--progress). Many clusters:
with --kube-context given more than once, or --all-contexts (every context of the kubeconfig),
each context's cluster is measured at the same time and the summary has a CONTEXT column; a
cluster that cannot be measured is one row saying why (exit 3), the others are reported. Every
report and summary ends with when and against what it was measured (context, API server;
checkedAt, context, server in JSON), so a stale report can be told from a fresh one.
"diff helmrelease": desired is what helm-controller (v1.6) would install for a Flux
HelmRelease now: its source's artifact (spec.chartRef, or the HelmChart made for spec.chart),
verified against the artifact's digest and versioned as helm-controller versions it; its values
from spec.values and valuesFrom (helm-controller's own code); its post-renderers (kustomize
patches and images, commonMetadata, the origin labels), rendered with the Helm 4 SDK as an
upgrade of the stored release (an install when there is none), lookup answered by the cluster.
The report says first what the next reconcile will do: upgrade (the chart, values,
post-renderers or common metadata changed, or the release is not yet this HelmRelease's),
drift correction (spec.driftDetection.mode enabled: it restores what the stored manifest
states, never removes a field only the cluster has), or nothing (suspended, drift detection
warn or disabled, a failed or pending release), and each row whether that reconcile resolves
it. The HelmRelease's spec.driftDetection.ignore applies. "--file" diffs a HelmRelease as
written in a Git checkout (a pull request's preview): objects beside it in the files (its
source, a values ConfigMap or Secret) are read from there first, then from the cluster; a
source without the artifact yet is read from its registry or repository. The chart's lookup
calls are answered as helm-controller answers them: as the HelmRelease's spec.serviceAccountName
(else --default-service-account), impersonated, when you may impersonate it; else as you, and
the report says so.

Every field is classified:
  DIFFERS       chart and cluster both have it, with different values
  CHART-ONLY    the chart states it, the cluster lacks it (a whole object too)
  CLUSTER-ONLY  the cluster has it, the chart does not, and it is not an API-server default
  SHADOWS       an inline env entry hides a key the container also gets from envFrom (prefix
                applied): says whether the two values agree, never the values; counted as
                drift unless they agree
Lists are matched by their merge keys (containers by name, ports by containerPort+protocol).
Each row says what an upgrade would do (UPGRADE yes/no), for the way Helm writes the release:
client-side (Helm 3's three-way merge; a two-way merge for custom resources) or server-side
(Helm 4: a field another manager owns conflicts; a dropped field goes only if Helm alone owns
it). "pending deletion" marks a field of the last release that the new render drops; "TO
PRUNE" an object it drops (unless helm.sh/resource-policy: keep); "inert" a field that
changes nothing in the pod (initialDelaySeconds beside a startupProbe). A SHADOWS row says,
from the new render, whether the upgrade keeps the inline entry, removes it (the new render
drops an entry the last release stated) or introduces it (a shadow only the new render has).
"diff upgrade" takes helm upgrade's flags, so a deploy's command line can be copied: after
"--", the deploy's own argument list is parsed as helm upgrade parses it (only helm upgrade's
flags there; diff's own, such as -o or --normalize, go before "--"). Flags that change how or
how long Helm applies, records or waits, not what it renders, are accepted and ignored:
--description, --wait (Helm 3's bool or Helm 4's strategy), --wait-for-jobs, --timeout,
--atomic, --rollback-on-failure, --cleanup-on-fail, --create-namespace, --no-hooks,
--hide-notes, --render-subchart-notes, --disable-openapi-validation, --history-max,
--labels, --dry-run, --debug, and after "--" helm's own -o/--output (--skip-crds is honoured:
the chart's crds/ are left out, as helm install creates none of them with it). helm's
cluster-connection flags (--kube-apiserver, --kube-token, --kube-as-user, --kube-as-group,
--kube-ca-file, --kube-insecure-skip-tls-verify, --kube-tls-server-name) are refused with a
message: diff reaches the cluster through a kubeconfig only.
"diff upgrade" and "diff helmrelease" render twice: a field on which the two renders disagree
(a random password, a generated certificate, a timestamp) is flagged "unstable" and not
counted as drift (--count-unstable counts it): every upgrade changes it. diff upgrade's second
render renders only the templates that call such a function (randAlphaNum, uuidv4, now,
genCA, lookup, ...), themselves or through what they include or give tpl; every template when
one may store such a value where another reads it (set, merge on shared values), includes a
template by a computed name, or a post-renderer is given.

Who moved: for a new render ("diff upgrade", "diff helmrelease") each row says who moved the
field away from what the stored release applied (MOVED): cluster (drift: the live object left
it), chart (the render differs from it and the live object still equals it: a change the
upgrade brings; when the chart and values are the stored release's, a note says the chart
renders it differently each time or once its objects exist, as a lookup of a generated
password does), or both. The summary line counts them: "N drift, M changes the upgrade brings".

Will it fail: for a new render, each object the upgrade writes is asked of the API server with
a dry run (server, auto: an apply over the live object, a create under its own name), which
meets the real validation and admission chain; a refusal (an immutable field, a schema, an
admission webhook or policy, a full quota) is WILL-FAIL with the server's reason, field and
message, and the report says "this upgrade will fail" first. Offline (or where the dry run may
not be made), the API server's own update validation runs in this process and finds the
immutable fields (Deployment, StatefulSet, DaemonSet, Job, CronJob, Service, PVC) and what a
custom resource's CRD schema and CEL rules refuse; admission and quotas it cannot see.

API-server defaults are not drift (--normalize):
  server   a server-side dry-run create of each object under a temporary name gives the API
           server's, the CRD schema's and admission's defaults; needs create RBAC on each kind
  offline  the API server's own write path, run in this process: each built-in object is
           decoded into its typed struct (nulls, empty and zero omitempty fields dropped),
           defaulted and converted by the code of Kubernetes v1.37 (feature gates set to the
           cluster's minor), a custom resource pruned and defaulted by its CRD's structural
           schema; what the server allocates (cluster IPs, node ports) is taken from the live
           object; admission mutations are not seen. Needs only get/list
  auto     server where the dry-run is permitted, offline per kind on a 403 (default)
Labels and annotations Helm, Flux and kubectl add are not drift. Ignore rules in Flux's syntax
leave fields out: --ignore, --ignore-file, and, for a release a Flux HelmRelease manages, its
own spec.driftDetection.ignore. A Secret's values are never printed: a key that differs, or
that one side lacks, is named with the sizes of its values, "(redacted, 15 bytes -> 6 bytes)".

The cluster is read with one LIST per kind and namespace (each CRD of the chart's crds/ with a
LIST of its one name, which the API server answers from its cache and which also gives its
kind's schema), plus discovery, the envFrom sources and, with --normalize server, one dry-run
per object; --stats prints the count.

Output (-o): table (coloured on a terminal, --color), json and yaml (schema in the README),
markdown, counts (numbers only: no field, key or value, for public CI logs); diff: a unified
diff per object, "---" the live side and "+++" the chart's, both normalised as compared, each
hunk led by its rows' verdicts (-C lines of context, -1 the whole object; coloured on a
terminal); with HELM_DRIFT_EXTERNAL_DIFF set (as KUBECTL_EXTERNAL_DIFF), -o diff writes the two
sides as directory trees (live/, chart/) and runs that program on them instead, and exits with
its code; github, gitlab: a pull-request comment (a summary line per release, a collapsible
diff per object) within the platform's size limit; for "diff upgrade" and "diff helmrelease
NAME", manifest: the rendered manifest itself, compared with nothing (a Secret's data and
stringData values printed as "(redacted)"), exit 0.

An object it cannot read (its kind forbidden or failing, its dry-run refused) fails that
object, not the run: the report shows the others and lists it under COULD NOT MEASURE.

Exit codes: 0 no drift; 2 drift found (a divergence, a pending deletion, an object the
upgrade would delete: one kept by helm.sh/resource-policy: keep, or already gone, is listed
under TO PRUNE but is no drift on its own; or an object Helm would refuse to adopt: REFUSED;
an object the API server refuses: WILL-FAIL; with --exit-code-on drift, only a field the
cluster moved, or WILL-FAIL); 3 could not measure (an object or
kind unreadable, the API unreachable: never reported as clean); 1 usage or other error (no
such release, chart or values file).
`

type diffOptions struct {
	namespace     string
	output        string
	ignore        []string
	ignoreFile    string
	normalize     string
	workers       int
	all           bool
	allNamespaces bool
	stats         bool
	// stamp is when and against what the run measures (one cluster).
	stamp   diff.Stamp
	noColor bool
	color   string
	// lines is -C: the unified diff's context lines (-1: the whole object).
	lines int
	// suggest is --suggest-ignore's format ("" when not asked).
	suggest string
	kube    kubeOptions

	// diff helmrelease
	files []string

	// diff upgrade
	valueOpts             values.Options
	version               string
	repo                  string
	devel                 bool
	postRenderer          string
	postRendererArgs      []string
	reuseValues           bool
	resetValues           bool
	resetThenReuse        bool
	lookup                bool
	enableDNS             bool
	countUnstable         bool
	skipCRDs              bool
	defaultServiceAccount string
	progress              string
	exitOn                string
	engine                string
	skipSchema            bool
	takeOwnership         bool
	install               bool
	dependencyUpdate      bool
	verify                bool
	keyring               string
	serverSide            string
	forceConflicts        bool
	force                 bool
	ignored               ignoredFlags
	registry              action.Registry
}

// BindFlags registers the diff flags on fs.
func (o *diffOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	fs.StringVarP(&o.output, "output", "o", "table", "table, json, yaml, markdown, counts, diff (a unified diff per object; HELM_DRIFT_EXTERNAL_DIFF runs a program on two trees instead), github or gitlab (a pull-request comment)")
	fs.IntVarP(&o.lines, "context", "C", 3, "-o diff, github, gitlab: unchanged lines shown around each change; -1 shows the whole object")
	fs.StringVar(&o.suggest, "suggest-ignore", "", "after the report, the ignore rules that stop drift correction fighting a controller over a field the chart states (who owns it: metadata.managedFields; an HPA's target's replicas, an injected caBundle, an aggregated ClusterRole's rules), never for a field the release or a person (kubectl) set: --suggest-ignore (Flux driftDetection.ignore) or --suggest-ignore=argocd (ignoreDifferences); in -o json/yaml as suggestedIgnore")
	fs.Lookup("suggest-ignore").NoOptDefVal = advise.Flux
	fs.StringVar(&o.color, "color", colorAuto, "colour in the table and -o diff: auto (on a terminal, unless NO_COLOR is set), always (even in a pipe or with NO_COLOR), never")
	fs.StringArrayVar(&o.ignore, "ignore", nil, "an RFC 6901 JSON pointer to leave out of the comparison in every object, e.g. /spec/replicas; repeatable")
	fs.StringVar(&o.ignoreFile, "ignore-file", "", "a YAML list of ignore rules in Flux's syntax (paths, optional target), as in spec.driftDetection.ignore")
	fs.StringVar(&o.normalize, "normalize", diff.Auto, "how API-server defaults are told from drift: server, offline or auto")
	fs.IntVar(&o.workers, "concurrency", 8, "requests in flight at most (1-64)")
	fs.BoolVar(&o.all, "all", false, "diff release / helmrelease: every release (HelmRelease) in the namespace, one summary row each")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "diff release / helmrelease: every release (HelmRelease) in every namespace (implies --all)")
	fs.StringArrayVar(&o.files, "file", nil, "diff helmrelease: a YAML file (- for stdin) holding the HelmRelease as written in Git, and any source, ConfigMap or Secret it reads that the change adds or edits; repeatable")
	fs.StringVar(&o.defaultServiceAccount, "default-service-account", "", "diff helmrelease: helm-controller's --default-service-account: the account a HelmRelease without spec.serviceAccountName renders as (its lookup calls are answered as the account, impersonated, when you may impersonate it; spec.serviceAccountName always is)")
	fs.StringVar(&o.progress, "progress", progressAuto, "diff release / helmrelease --all: a progress line on stderr (releases measured of the total, elapsed, estimate): auto (on a terminal, not in CI), always, never")
	fs.BoolVar(&o.stats, "stats", false, "print the API requests made to stderr")
	fs.StringVar(&o.exitOn, "exit-code-on", exitOnChange, "what exits 2: change (any divergence, pending deletion or object to prune: what the upgrade would change, as helm-diff's --detailed-exitcode) or drift (only fields the cluster moved away from what the stored release applied: a sentinel that stays quiet on changes the chart alone brings)")
	fs.BoolVar(&o.noColor, "no-color", false, "the same as --color never")
	fs.StringArrayVarP(&o.valueOpts.ValueFiles, "values", "f", nil, "diff upgrade: values file or URL, as helm upgrade -f; repeatable")
	fs.StringArrayVar(&o.valueOpts.Values, "set", nil, "diff upgrade: key=value, as helm upgrade --set; repeatable")
	fs.StringArrayVar(&o.valueOpts.StringValues, "set-string", nil, "diff upgrade: key=value as a string; repeatable")
	fs.StringArrayVar(&o.valueOpts.JSONValues, "set-json", nil, "diff upgrade: key=JSON value; repeatable")
	fs.StringArrayVar(&o.valueOpts.FileValues, "set-file", nil, "diff upgrade: key=path, the value read from the file; repeatable")
	fs.StringArrayVar(&o.valueOpts.LiteralValues, "set-literal", nil, "diff upgrade: key=value, the value taken literally (no commas, escapes or types), as helm upgrade --set-literal; repeatable")
	fs.BoolVar(&o.skipSchema, "skip-schema-validation", false, "diff upgrade: do not validate the values against the chart's values.schema.json, as helm upgrade --skip-schema-validation")
	fs.BoolVar(&o.dependencyUpdate, "dependency-update", false, "diff upgrade: as helm upgrade --dependency-update: fetch the dependencies missing from the chart's charts/ directory first (written there, as helm writes them)")
	fs.BoolVarP(&o.install, "install", "i", false, "diff upgrade: as helm upgrade --install: a release that does not exist yet is rendered as its install (every object a creation; an object already in the cluster that Helm would refuse to adopt is reported REFUSED)")
	fs.BoolVar(&o.takeOwnership, "take-ownership", false, "diff upgrade: render as helm upgrade --take-ownership, which adopts objects another release or nobody owns instead of refusing them")
	fs.StringVar(&o.serverSide, "server-side", "auto", "diff upgrade: Helm 4's apply method: true (server-side apply), false (client-side), auto (as the release was written); the predictions follow it")
	fs.BoolVar(&o.forceConflicts, "force-conflicts", false, "diff upgrade: as Helm 4's helm upgrade --force-conflicts: a server-side apply takes fields other managers own; the predictions follow it")
	fs.BoolVar(&o.force, "force", false, "diff upgrade: as helm upgrade --force (Helm 3) / --force-replace (Helm 4): objects are replaced, so every row is resolved")
	fs.BoolVar(&o.force, "force-replace", false, "diff upgrade: the Helm 4 name of --force")
	fs.BoolVar(&o.skipCRDs, "skip-crds", false, "diff upgrade: as helm upgrade --skip-crds: the chart's crds/ are left out (an --install creates none of them with it, and helm upgrade never touches them); without it they are compared with the cluster's")
	o.bindIgnored(fs)
	o.bindRefused(fs)
	fs.BoolVar(&o.verify, "verify", false, "diff upgrade: as helm upgrade --verify: verify the chart's provenance file before rendering it")
	fs.StringVar(&o.keyring, "keyring", defaultKeyring(), "diff upgrade: the public keys --verify uses, as helm upgrade --keyring")
	fs.StringVar(&o.version, "version", "", "diff upgrade: chart version constraint, as helm upgrade --version")
	fs.StringVar(&o.repo, "repo", "", "diff upgrade: chart repository URL")
	fs.BoolVar(&o.devel, "devel", false, "diff upgrade: consider development versions too")
	fs.StringVar(&o.postRenderer, "post-renderer", "", "diff upgrade: the post-renderer, as helm upgrade --post-renderer takes it: a path to an executable (Helm 3), or the name of a Helm 4 postrenderer/v1 plugin (else of an executable on PATH)")
	fs.StringArrayVar(&o.postRendererArgs, "post-renderer-args", nil, "diff upgrade: an argument to the post-renderer; repeatable")
	fs.BoolVar(&o.reuseValues, "reuse-values", false, "diff upgrade: as helm upgrade --reuse-values")
	fs.BoolVar(&o.resetValues, "reset-values", false, "diff upgrade: as helm upgrade --reset-values")
	fs.BoolVar(&o.resetThenReuse, "reset-then-reuse-values", false, "diff upgrade: as helm upgrade --reset-then-reuse-values")
	fs.BoolVar(&o.lookup, "lookup", true, "diff upgrade: render the chart's lookup calls against the cluster, as helm upgrade does (needs get/list on what it looks up); false renders them empty, as helm template does")
	fs.BoolVar(&o.enableDNS, "enable-dns", false, "diff upgrade: as helm upgrade --enable-dns")
	fs.StringVar(&o.engine, "engine", action.EngineAuto, "diff upgrade: the Helm SDK that renders: auto (the one of the Helm that wrote the release: Helm 4 stores how it applied), helm3 or helm4")
	fs.BoolVar(&o.countUnstable, "count-unstable", false, "diff upgrade: count as drift the fields on which two renders of the same inputs disagree (random values, timestamps); by default they are flagged unstable and not counted; diff helmrelease too")
	fs.BoolVar(&o.registry.PlainHTTP, "plain-http", false, "diff upgrade: reach the chart's registry or repository over plain HTTP")
	fs.BoolVar(&o.registry.Insecure, "insecure-skip-tls-verify", false, "diff upgrade: do not verify the chart registry's TLS certificate")
	fs.StringVar(&o.registry.CAFile, "ca-file", "", "diff upgrade: CA bundle for the chart registry or repository")
	fs.StringVar(&o.registry.CertFile, "cert-file", "", "diff upgrade: client certificate for the chart registry or repository")
	fs.StringVar(&o.registry.KeyFile, "key-file", "", "diff upgrade: client key for the chart registry or repository")
	fs.StringVar(&o.registry.Username, "username", "", "diff upgrade: chart repository user name")
	fs.StringVar(&o.registry.Password, "password", "", "diff upgrade: chart repository password")
	fs.BoolVar(&o.registry.PassCredentials, "pass-credentials", false, "diff upgrade: pass credentials to all domains")
	o.kube.BindFleetFlags(fs)
}

func runDiff(args []string, in io.Reader, out, errOut io.Writer) int {
	o, fs, code, done := parseDiff(args, out, errOut)
	if done {
		return code
	}
	if err := o.validate(fs); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\nRun \"helm drift diff --help\" for the usage.\n", err)
		return ExitError
	}
	collectFor(o.all || o.allNamespaces)
	rules, err := o.ignoreRules()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	ctx := context.Background()
	var fileTargets []action.HelmReleaseTarget
	if fs.Arg(0) == "helmrelease" && len(o.files) > 0 {
		// Bad files fail before the cluster is asked anything.
		if fileTargets, err = o.readFiles(fs.Arg(1), in); err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
	}
	m := action.Measure{Rules: rules, Normalize: o.normalize, Workers: o.workers, Views: o.lineView(), Suggest: o.suggest != ""}
	if o.kube.fleet() {
		return o.runFleet(ctx, fs.Arg(0), m, out, errOut)
	}
	start := now()
	cfg, err := action.NewConfiguration(o.kube.options(), nil)
	if err == nil {
		err = cfg.Connect(ctx)
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	o.stamp = diff.NewStamp(start, cfg.Context(), cfg.Server())
	if o.stats {
		defer func() { fmt.Fprintf(errOut, "helm-drift diff: %s\n", cfg.Counts) }()
	}
	if o.all || o.allNamespaces {
		update, finish := progressLine(o.progress, errOut, o.progressWhat(fs.Arg(0)))
		defer finish()
		if update != nil {
			m.Progress = func(done, total int) { update("", done, total) }
		}
	}
	all := o.all || o.allNamespaces
	switch fs.Arg(0) {
	case "helmrelease":
		return o.runHelmRelease(ctx, o.diffHelmRelease(cfg, m), fileTargets, fs.Arg(1), out, errOut)
	case "release":
		d := &action.DiffRelease{Config: cfg, Measure: m, Namespace: o.namespace}
		if all {
			s, err := d.RunAll(ctx, o.allNamespaces)
			return o.writeSummary(s, err, func(r diff.SummaryRow) string { return r.Namespace + "/" + r.Release }, out, errOut)
		}
		return o.report(func() (*diff.Report, error) { return d.Run(ctx, fs.Arg(1)) }, out, errOut)
	}
	return o.report(o.printManifest(func() (*action.Result, error) {
		d, err := o.diffUpgrade(cfg, m, fs.Arg(1), fs.Arg(2), errOut)
		if err != nil {
			return nil, err
		}
		return d.Run(ctx)
	}, out), out, errOut)
}

// diffHelmRelease is the diff helmrelease these flags ask for, on cfg's cluster.
func (o *diffOptions) diffHelmRelease(cfg *action.Configuration, m action.Measure) *action.DiffHelmRelease {
	return &action.DiffHelmRelease{Config: cfg, Measure: m, PlainHTTP: o.registry.PlainHTTP,
		ManifestOnly: o.output == outputManifest, CountUnstable: o.countUnstable, DefaultServiceAccount: o.defaultServiceAccount}
}

// progressWhat is what the progress line counts for verb.
func (o *diffOptions) progressWhat(verb string) string {
	if verb == "helmrelease" {
		return "HelmReleases measured"
	}
	return "releases measured"
}

// runFleet measures verb's --all/-A in the cluster of every context asked for, concurrently,
// and prints one summary with a CONTEXT column: a cluster that cannot be measured is a row
// saying why (exit 3), the others are reported all the same.
func (o *diffOptions) runFleet(ctx context.Context, verb string, m action.Measure, out, errOut io.Writer) int {
	contexts, err := o.kube.fleetContexts()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	update, finish := progressLine(o.progress, errOut, o.progressWhat(verb))
	f := action.Fleet{Options: o.kube.options(), Contexts: contexts, Now: now}
	s, configs := f.Run(ctx, func(ctx context.Context, cfg *action.Configuration, progress func(done, total int)) (*action.Summary, error) {
		m := m
		m.Progress = progress
		if verb == "helmrelease" {
			ns := o.namespace
			if o.allNamespaces {
				ns = ""
			}
			return o.diffHelmRelease(cfg, m).RunAllIn(ctx, ns)
		}
		return (&action.DiffRelease{Config: cfg, Measure: m, Namespace: o.namespace}).RunAll(ctx, o.allNamespaces)
	}, update)
	finish()
	if o.stats {
		for i, cfg := range configs {
			if cfg != nil {
				fmt.Fprintf(errOut, "helm-drift diff: context %s: %s\n", contexts[i], cfg.Counts)
			}
		}
	}
	name := func(r diff.SummaryRow) string { return "context " + r.Context + ": " + r.Namespace + "/" + r.Release }
	if verb == "helmrelease" {
		name = func(r diff.SummaryRow) string { return "context " + r.Context + ": HelmRelease " + r.HelmRelease }
	}
	return o.writeSummary(s, nil, name, out, errOut)
}

// runHelmRelease diffs one HelmRelease (NAME or NAMESPACE/NAME, or the one of the files), or
// several (--all, or files holding more than one), one summary row each.
func (o *diffOptions) runHelmRelease(ctx context.Context, d *action.DiffHelmRelease, targets []action.HelmReleaseTarget, arg string, out, errOut io.Writer) int {
	var err error
	switch {
	case len(targets) > 0:
	case o.all || o.allNamespaces:
		ns := o.namespace
		if o.allNamespaces {
			ns = ""
		}
		targets, err = d.List(ctx, ns)
	default:
		ns, name := o.namespace, arg
		if a, b, ok := strings.Cut(arg, "/"); ok {
			ns, name = a, b
		}
		var t action.HelmReleaseTarget
		t, err = d.Get(ctx, ns, name)
		targets = []action.HelmReleaseTarget{t}
	}
	switch {
	case isInputError(err):
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	case err != nil:
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	case len(targets) != 1 && o.output == outputManifest:
		fmt.Fprintf(errOut, "helm-drift diff: -o manifest prints one HelmRelease: the files hold %d; name one (diff helmrelease --file F NAME)\n", len(targets))
		return ExitError
	case len(targets) != 1 || o.all || o.allNamespaces:
		s, err := d.RunAll(ctx, targets)
		return o.writeSummary(s, err, func(r diff.SummaryRow) string { return "HelmRelease " + r.HelmRelease }, out, errOut)
	}
	return o.report(o.printManifest(func() (*action.Result, error) { return d.Run(ctx, targets[0]) }, out), out, errOut)
}

// printManifest turns a run into report's measure: with -o manifest it prints the run's
// manifest (redacted) and reports nothing.
func (o *diffOptions) printManifest(run func() (*action.Result, error), out io.Writer) func() (*diff.Report, error) {
	return func() (*diff.Report, error) {
		res, err := run()
		switch {
		case err != nil:
			return nil, err
		case o.output == outputManifest:
			return nil, writeManifest(out, res.Manifest)
		}
		return res.Report, nil
	}
}

// readFiles reads --file's HelmReleases (- for stdin), the one named arg if set.
func (o *diffOptions) readFiles(arg string, in io.Reader) ([]action.HelmReleaseTarget, error) {
	files := make([]action.File, 0, len(o.files))
	for _, f := range o.files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(in)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, &action.InputError{Err: fmt.Errorf("--file %s: %w", f, err)}
		}
		files = append(files, action.File{Name: f, Data: data})
	}
	return action.HelmReleaseFiles(files, o.namespace, arg)
}

// report measures one report, writes it and returns the exit code.
func (o *diffOptions) report(measure func() (*diff.Report, error), out, errOut io.Writer) int {
	rep, err := measure()
	if rep == nil && err == nil {
		return ExitOK // -o manifest: printed, nothing measured
	}
	if isInputError(err) {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	rep.Stamp = o.stamp
	external := ExitOK
	if o.lineView() {
		row := diff.Summarise(rep)
		row.Report = rep
		var err error
		if external, err = o.writeView([]diff.SummaryRow{row}, []diff.ClusterRun{{Stamp: o.stamp}}, out, errOut); err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
	} else if err := diff.Write(out, []*diff.Report{rep}, o.output, o.colour(out)); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if err := o.writeSuggested(out, []*diff.Report{rep}); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if !rep.Measured() {
		for _, obj := range rep.Objects {
			if obj.Error != "" {
				fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", obj.Object, obj.Error)
			}
		}
		return ExitUnmeasured
	}
	if o.externalDiff() != "" {
		return external
	}
	if o.exitOn == exitOnDrift && rep.Drifted() || o.exitOn != exitOnDrift && rep.Drift() {
		return ExitDrift
	}
	return ExitOK
}

// writeSuggested prints, after the reports, the ignore rules --suggest-ignore asked for, one
// block per report (in -o json and yaml they are in the report, or in the summary's rows, as
// suggestedIgnore).
func (o *diffOptions) writeSuggested(out io.Writer, reps []*diff.Report) error {
	if o.suggest == "" || o.output == "json" || o.output == "yaml" {
		return nil
	}
	fence := o.output == "markdown" || o.output == outputGitHub || o.output == outputGitLab
	for _, r := range reps {
		if a := r.Suggested; a == nil || len(reps) > 1 && len(a.Rules) == 0 && len(a.Skipped) == 0 && len(a.Notes) == 0 {
			continue // over many releases, only those with something to say
		}
		what := "release " + r.Namespace + "/" + r.Release
		if r.Next != nil {
			what = "HelmRelease " + r.HelmRelease
		}
		fmt.Fprintln(out)
		if fence {
			fmt.Fprintln(out, "```yaml")
		} else if len(reps) > 1 || o.output != "table" {
			fmt.Fprintln(out, "---")
		}
		if err := advise.Write(out, r.Suggested, what, o.suggest); err != nil {
			return err
		}
		if fence {
			fmt.Fprintln(out, "```")
		}
	}
	return nil
}

// The views that need each object's two sides.
const (
	outputDiff   = "diff"
	outputGitHub = "github"
	outputGitLab = "gitlab"
)

// --color values.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// lineView reports whether the output is a line view (-o diff, github, gitlab).
func (o *diffOptions) lineView() bool {
	return o.output == outputDiff || o.output == outputGitHub || o.output == outputGitLab
}

// externalDiff is the program HELM_DRIFT_EXTERNAL_DIFF names for -o diff ("" for none).
func (o *diffOptions) externalDiff() string {
	if o.output != outputDiff {
		return ""
	}
	return strings.TrimSpace(os.Getenv(view.ExternalDiffEnv))
}

// writeView prints rows (each with its report) in a line view: the unified diff, the
// pull-request comment, or, with HELM_DRIFT_EXTERNAL_DIFF, the program's output on the two
// trees, whose exit code it returns.
func (o *diffOptions) writeView(rows []diff.SummaryRow, clusters []diff.ClusterRun, out, errOut io.Writer) (int, error) {
	switch o.output {
	case outputGitHub:
		return ExitOK, view.WriteComment(out, rows, clusters, view.GitHub, o.lines)
	case outputGitLab:
		return ExitOK, view.WriteComment(out, rows, clusters, view.GitLab, o.lines)
	}
	if prog := o.externalDiff(); prog != "" {
		return view.RunExternal(context.Background(), prog, rows, out, errOut)
	}
	return ExitOK, view.WriteDiff(out, rows, clusters, view.Options{Context: o.lines, Colour: o.colour(out)})
}

func (o *diffOptions) validate(fs *pflag.FlagSet) error {
	switch {
	case o.output == outputManifest && (fs.Arg(0) != "upgrade" && fs.Arg(0) != "helmrelease" || o.all || o.allNamespaces):
		return fmt.Errorf("-o manifest goes with \"diff upgrade\" and \"diff helmrelease NAME\" (one release): it prints what would be installed")
	case o.output != outputManifest && !o.lineView() && !slices.Contains(diff.Formats, o.output):
		return fmt.Errorf("--output %q: want one of %s, diff, github, gitlab, or manifest", o.output, strings.Join(diff.Formats, ", "))
	case o.color != colorAuto && o.color != colorAlways && o.color != colorNever:
		return fmt.Errorf("--color %q: want auto, always or never", o.color)
	case o.lines < -1:
		return fmt.Errorf("--context %d: want 0 or more lines, or -1 for the whole object", o.lines)
	case o.suggest != "" && o.suggest != advise.Flux && o.suggest != advise.ArgoCD:
		return fmt.Errorf("--suggest-ignore %q: want flux or argocd", o.suggest)
	case o.suggest != "" && (o.output == "counts" || o.output == outputManifest):
		return fmt.Errorf("--suggest-ignore prints fields and managers: it does not go with -o %s", o.output)
	}
	if o.normalize != diff.Server && o.normalize != diff.Offline && o.normalize != diff.Auto {
		return fmt.Errorf("--normalize %q: want server, offline or auto", o.normalize)
	}
	if o.force && o.forceConflicts {
		return errors.New("--force (--force-replace) and --force-conflicts cannot go together, as in helm upgrade")
	}
	if o.serverSide != "auto" && o.serverSide != "true" && o.serverSide != "false" {
		return fmt.Errorf("--server-side %q: want true, false or auto", o.serverSide)
	}
	if o.exitOn != exitOnChange && o.exitOn != exitOnDrift {
		return fmt.Errorf("--exit-code-on %q: want change or drift", o.exitOn)
	}
	if o.engine != action.EngineAuto && o.engine != action.EngineHelm3 && o.engine != action.EngineHelm4 {
		return fmt.Errorf("--engine %q: want auto, helm3 or helm4", o.engine)
	}
	if o.workers < 1 || o.workers > 64 {
		return fmt.Errorf("--concurrency %d: want 1 to 64", o.workers)
	}
	all := o.all || o.allNamespaces
	switch {
	case fs.NArg() == 0:
		return fmt.Errorf("want \"diff upgrade RELEASE CHART\", \"diff release RELEASE\" or \"diff helmrelease NAME\"")
	case len(o.files) > 0 && fs.Arg(0) != "helmrelease":
		return fmt.Errorf("--file goes with \"diff helmrelease\"")
	case validProgress(o.progress) != nil:
		return validProgress(o.progress)
	case o.defaultServiceAccount != "" && fs.Arg(0) != "helmrelease":
		return fmt.Errorf("--default-service-account goes with \"diff helmrelease\"")
	case strings.ContainsAny(o.defaultServiceAccount, ": /"):
		return fmt.Errorf("--default-service-account %q: want a service account name in the HelmRelease's namespace, as helm-controller's flag takes it", o.defaultServiceAccount)
	case fs.Arg(0) == "helmrelease" && all && (fs.NArg() != 1 || len(o.files) > 0):
		return fmt.Errorf("diff helmrelease --all takes no name and no --file")
	case fs.Arg(0) == "helmrelease" && !all && len(o.files) == 0 && fs.NArg() != 2:
		return fmt.Errorf("want \"diff helmrelease NAME\" (or NAMESPACE/NAME, --all, or --file FILE)")
	case fs.Arg(0) == "helmrelease" && fs.NArg() > 2:
		return fmt.Errorf("want \"diff helmrelease NAME\": one name")
	case fs.Arg(0) == "helmrelease":
	case fs.Arg(0) == "release" && all && fs.NArg() != 1:
		return fmt.Errorf("diff release --all takes no release name")
	case fs.Arg(0) == "release" && !all && fs.NArg() != 2:
		return fmt.Errorf("want \"diff release RELEASE\" (or --all)")
	case fs.Arg(0) == "upgrade" && all:
		return fmt.Errorf("--all and -A go with \"diff release\"")
	case o.kube.fleet() && !all:
		return fmt.Errorf("several clusters (--kube-context given %d times, or --all-contexts) go with --all or -A of \"diff release\" and \"diff helmrelease\": one summary row per release and cluster", len(o.kube.contexts))
	case o.kube.allContexts && fs.Changed("kube-context"):
		return fmt.Errorf("--all-contexts measures every context of the kubeconfig: drop --kube-context, or name each context with --kube-context instead")
	case fs.Arg(0) == "upgrade" && fs.NArg() != 3:
		return fmt.Errorf("want \"diff upgrade RELEASE CHART\"")
	case fs.Arg(0) != "release" && fs.Arg(0) != "upgrade":
		return fmt.Errorf("unknown \"diff %s\": want \"diff upgrade\", \"diff release\" or \"diff helmrelease\"", fs.Arg(0))
	}
	misplaced := refusedIn(fs)
	if fs.Arg(0) == "helmrelease" {
		fs.Visit(func(f *pflag.Flag) {
			if misplaced == nil && f.Name != "plain-http" && f.Name != "count-unstable" && (strings.HasPrefix(f.Usage, "diff upgrade:") || strings.HasPrefix(f.Usage, ignoredUsage)) {
				misplaced = fmt.Errorf("--%s goes with \"diff upgrade\": \"diff helmrelease\" renders the HelmRelease's own chart, values and post-renderers", f.Name)
			}
		})
	}
	if fs.Arg(0) == "release" {
		// The flags whose help starts "diff upgrade:" say how to render the chart.
		fs.Visit(func(f *pflag.Flag) {
			if misplaced == nil && (strings.HasPrefix(f.Usage, "diff upgrade:") || strings.HasPrefix(f.Usage, ignoredUsage)) {
				misplaced = fmt.Errorf("--%s goes with \"diff upgrade\": \"diff release\" compares the stored manifest", f.Name)
			}
		})
	}
	return misplaced
}

// parseDiff parses diff's arguments: flags and positional ones, and, after "--", a deploy's
// helm upgrade argument list. done is set when the run ends here, with code.
func parseDiff(args []string, out, errOut io.Writer) (o *diffOptions, fs *pflag.FlagSet, code int, done bool) {
	o = &diffOptions{}
	fs = pflag.NewFlagSet("diff", pflag.ContinueOnError)
	o.BindFlags(fs)
	deploy, hasDeploy := deployArgs(args)
	if hasDeploy {
		args = args[:len(args)-len(deploy)-1]
	}
	if code, done := parseFlags(fs, diffUsage, args, out, errOut); done {
		return o, fs, code, true
	}
	if !hasDeploy {
		return o, fs, ExitOK, false
	}
	if fs.NArg() != 1 || fs.Arg(0) != "upgrade" {
		fmt.Fprintf(errOut, "helm-drift diff: \"--\" goes after \"diff upgrade\" and its diff flags: helm drift diff upgrade [flags] -- RELEASE CHART [helm upgrade flags]\n")
		return o, fs, ExitError, true
	}
	// The deploy's own argument list, parsed as helm upgrade parses it: only helm upgrade's
	// flags, bound to the same options.
	up := upgradeFlagSet(fs)
	o.bindDeployOutput(up)
	if code, done := parseFlags(up, diffUsage, deploy, out, errOut); done {
		return o, fs, code, true
	}
	if err := refusedIn(up); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return o, fs, ExitError, true
	}
	if up.NArg() != 2 {
		fmt.Fprintf(errOut, "helm-drift diff: after \"--\" want helm upgrade's arguments: RELEASE CHART [flags], got %d positional arguments\n", up.NArg())
		return o, fs, ExitError, true
	}
	if err := fs.Parse(append([]string{"upgrade"}, up.Args()...)); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return o, fs, ExitError, true
	}
	return o, fs, ExitOK, false
}

// deployArgs returns what follows the first "--" of args: a deploy's helm upgrade arguments.
func deployArgs(args []string) ([]string, bool) {
	for i, a := range args {
		if a == "--" {
			return args[i+1:], true
		}
	}
	return nil, false
}

// upgradeFlagSet holds the flags of fs that helm upgrade has too (those that say how to render
// the chart, the ignored ones, the namespace and the cluster), sharing their values, for the
// argument list after "--".
func upgradeFlagSet(fs *pflag.FlagSet) *pflag.FlagSet {
	up := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case strings.HasPrefix(f.Usage, "diff upgrade:"), strings.HasPrefix(f.Usage, ignoredUsage), strings.HasPrefix(f.Usage, "refused:"),
			f.Name == "namespace", f.Name == "kubeconfig", f.Name == "kube-context":
			up.AddFlag(f)
		}
	})
	return up
}

// colour reports whether the table or the unified diff is coloured: --color always, or auto
// with out a terminal and NO_COLOR unset (no-color.org: an explicit request wins).
func (o *diffOptions) colour(out io.Writer) bool {
	switch {
	case o.output != "table" && o.output != outputDiff:
		return false
	case o.noColor || o.color == colorNever:
		return false
	case o.color == colorAlways:
		return true
	case os.Getenv("NO_COLOR") != "":
		return false
	}
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ignoreRules reads --ignore and --ignore-file.
func (o *diffOptions) ignoreRules() ([]flux.IgnoreRule, error) {
	var rules []flux.IgnoreRule
	if len(o.ignore) > 0 {
		rules = append(rules, flux.IgnoreRule{Paths: o.ignore})
	}
	if o.ignoreFile != "" {
		data, err := os.ReadFile(o.ignoreFile)
		if err != nil {
			return nil, fmt.Errorf("--ignore-file: %w", err)
		}
		var fromFile []flux.IgnoreRule
		if err := sigsyaml.UnmarshalStrict(data, &fromFile); err != nil {
			return nil, fmt.Errorf("--ignore-file %s: want a YAML list of {paths, target} rules: %v", o.ignoreFile, err)
		}
		rules = append(rules, fromFile...)
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("ignore rule %d: %w", i+1, err)
		}
	}
	return rules, nil
}

// isInputError reports a mistake in what was asked (no such release, chart or values file):
// exit 1, not "could not measure".
func isInputError(err error) bool {
	var in *action.InputError
	return errors.As(err, &in)
}

// diffUpgrade is the upgrade these flags ask for.
func (o *diffOptions) diffUpgrade(cfg *action.Configuration, m action.Measure, name, chartRef string, errOut io.Writer) (*action.DiffUpgrade, error) {
	spec := action.UpgradeSpec{Release: name, Namespace: o.namespace, Chart: chartRef,
		Values: o.valueOpts, Version: o.version, Repo: o.repo, Devel: o.devel, Registry: o.registry,
		Verify: o.verify, Keyring: o.keyring, Lookup: o.lookup, EnableDNS: o.enableDNS, SkipSchemaValidation: o.skipSchema,
		ReuseValues: o.reuseValues, ResetValues: o.resetValues, ResetThenReuseValues: o.resetThenReuse,
		DependencyUpdate: o.dependencyUpdate, Kubeconfig: o.kube.kubeconfig, KubeContext: o.kube.context(), Log: errOut}
	if o.postRenderer != "" {
		pr, err := action.ResolvePostRenderer(o.postRenderer, o.postRendererArgs)
		if err != nil {
			return nil, err
		}
		spec.PostRenderer = pr
	}
	return &action.DiffUpgrade{Config: cfg, Measure: m, Spec: spec, Install: o.install, Engine: o.engine, ServerSide: o.serverSide,
		ForceConflicts: o.forceConflicts, Force: o.force, TakeOwnership: o.takeOwnership, CountUnstable: o.countUnstable,
		SkipCRDs: o.skipCRDs, ManifestOnly: o.output == outputManifest}, nil
}

// writeSummary prints the summary rows of a --all run, then on stderr what could not be
// measured (name says which release or HelmRelease a row is), and returns the exit code: 3 if
// anything could not be measured (err: the run itself), else 2 if any row shows drift, else 0.
func (o *diffOptions) writeSummary(s *action.Summary, err error, name func(diff.SummaryRow) string, out, errOut io.Writer) int {
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	if s.Clusters == nil {
		s.Clusters = []diff.ClusterRun{{Stamp: o.stamp}}
	}
	external := -1
	if o.lineView() {
		code, err := o.writeView(s.Rows, s.Clusters, out, errOut)
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
		if o.externalDiff() != "" {
			external = code
		}
	} else if err := diff.WriteSummary(out, s.Rows, s.Clusters, o.output); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	var reps []*diff.Report
	for _, r := range s.Rows {
		if r.Report != nil {
			reps = append(reps, r.Report)
		}
	}
	if err := o.writeSuggested(out, reps); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	code := ExitOK
	for _, c := range s.Clusters {
		if c.Error != "" {
			fmt.Fprintf(errOut, "helm-drift diff: could not measure context %s: %s\n", c.Context, c.Error)
			code = ExitUnmeasured
		}
	}
	for _, u := range s.Unmeasured {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s\n", u)
		code = ExitUnmeasured
	}
	for _, r := range s.Rows {
		switch {
		case r.Error != "":
			fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", name(r), r.Error)
			code = ExitUnmeasured
		case code == ExitOK && o.exitOn == exitOnDrift && r.Drift > 0:
			code = ExitDrift
		case code == ExitOK && o.exitOn != exitOnDrift && (r.Divergences > 0 || r.PendingDeletions > 0 || r.Unmeasured > 0):
			code = ExitDrift
		}
	}
	if external >= 0 && code != ExitUnmeasured {
		return external // the program's, as kubectl diff passes it through
	}
	return code
}

// defaultKeyring is helm's default --keyring: ~/.gnupg/pubring.gpg (GNUPGHOME when set).
func defaultKeyring() string {
	if v, ok := os.LookupEnv("GNUPGHOME"); ok {
		return filepath.Join(v, "pubring.gpg")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".gnupg", "pubring.gpg")
	}
	return ""
}

// refusedIn reports the first of helm's cluster-connection flags set in fs.
func refusedIn(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && slices.Contains(refusedFlags, f.Name) {
			err = fmt.Errorf("--%s: diff cannot honour it: it reaches the cluster through a kubeconfig only; put the server and credentials in one and pass --kubeconfig (and --kube-context)", f.Name)
		}
	})
	return err
}
