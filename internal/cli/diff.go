package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/live"
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

"diff upgrade": desired is what "helm upgrade RELEASE CHART" with the same flags would install,
rendered in-process with the Helm SDK (values reused as helm upgrade reuses them, the
post-renderer run, lookup calls answered by the cluster). "diff release": desired is the
manifest Helm stored for the release's latest revision (what helm-controller's drift
detection compares). "--all": every release in the namespace (-A: in all namespaces), one
summary row each.
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
source without the artifact yet is read from its registry or repository.

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
--hide-notes, --render-subchart-notes, --skip-crds, --disable-openapi-validation,
--history-max, --labels, --dry-run, --debug, and after "--" helm's own -o/--output. helm's
cluster-connection flags (--kube-apiserver, --kube-token, --kube-as-user, --kube-as-group,
--kube-ca-file, --kube-insecure-skip-tls-verify, --kube-tls-server-name) are refused with a
message: diff reaches the cluster through a kubeconfig only.
"diff upgrade" renders twice: a field on which the two renders disagree (a random password,
a timestamp) is flagged "unstable" and not counted as drift (--count-unstable counts it).

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
own spec.driftDetection.ignore. A Secret's values are never printed, nor their length: its
rows say only that they differ.

The cluster is read with one LIST per kind and namespace (plus discovery, the envFrom sources
and, with --normalize server, one dry-run per object); --stats prints the count.

Output (-o): table (colour on a terminal unless NO_COLOR is set), json and yaml (schema in the
README), markdown, counts (numbers only: no field, key or value, for public CI logs); for "diff
upgrade" and "diff helmrelease NAME", manifest: the rendered manifest itself, compared with
nothing (a Secret's data and stringData values printed as "(redacted)"), exit 0.

An object it cannot read (its kind forbidden or failing, its dry-run refused) fails that
object, not the run: the report shows the others and lists it under COULD NOT MEASURE.

Exit codes: 0 no drift; 2 drift found (a divergence, a pending deletion, an object the
upgrade would delete: one kept by helm.sh/resource-policy: keep, or already gone, is listed
under TO PRUNE but is no drift on its own; or an object Helm would refuse to adopt: REFUSED); 3 could not measure (an object or kind unreadable, the API unreachable: never
reported as clean); 1 usage or other error (no such release, chart or values file).
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
	noColor       bool
	kube          kubeOptions
	// cfg is the run's one cluster configuration: the kubeconfig loaded once, one discovery
	// cache for the live client and both Helm SDKs.
	cfg *action.Configuration

	// diff helmrelease
	files []string
	// manifestOut receives -o manifest's output.
	manifestOut io.Writer

	// diff upgrade
	valueOpts        values.Options
	version          string
	repo             string
	devel            bool
	postRenderer     string
	postRendererArgs []string
	reuseValues      bool
	resetValues      bool
	resetThenReuse   bool
	lookup           bool
	enableDNS        bool
	countUnstable    bool
	engine           string
	skipSchema       bool
	takeOwnership    bool
	install          bool
	dependencyUpdate bool
	verify           bool
	keyring          string
	serverSide       string
	forceConflicts   bool
	force            bool
	ignored          ignoredFlags
	registry         action.Registry
}

// BindFlags registers the diff flags on fs.
func (o *diffOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	fs.StringVarP(&o.output, "output", "o", "table", "table, json, yaml, markdown or counts")
	fs.StringArrayVar(&o.ignore, "ignore", nil, "an RFC 6901 JSON pointer to leave out of the comparison in every object, e.g. /spec/replicas; repeatable")
	fs.StringVar(&o.ignoreFile, "ignore-file", "", "a YAML list of ignore rules in Flux's syntax (paths, optional target), as in spec.driftDetection.ignore")
	fs.StringVar(&o.normalize, "normalize", diff.Auto, "how API-server defaults are told from drift: server, offline or auto")
	fs.IntVar(&o.workers, "concurrency", 8, "requests in flight at most (1-64)")
	fs.BoolVar(&o.all, "all", false, "diff release / helmrelease: every release (HelmRelease) in the namespace, one summary row each")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "diff release / helmrelease: every release (HelmRelease) in every namespace (implies --all)")
	fs.StringArrayVar(&o.files, "file", nil, "diff helmrelease: a YAML file (- for stdin) holding the HelmRelease as written in Git, and any source, ConfigMap or Secret it reads that the change adds or edits; repeatable")
	fs.BoolVar(&o.stats, "stats", false, "print the API requests made to stderr")
	fs.BoolVar(&o.noColor, "no-color", false, "no colour in the table (also: NO_COLOR set)")
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
	fs.StringVar(&o.engine, "engine", engineAuto, "diff upgrade: the Helm SDK that renders: auto (the one of the Helm that wrote the release: Helm 4 stores how it applied), helm3 or helm4")
	fs.BoolVar(&o.countUnstable, "count-unstable", false, "diff upgrade: count as drift the fields on which two renders of the same inputs disagree (random values, timestamps); by default they are flagged unstable and not counted")
	fs.BoolVar(&o.registry.PlainHTTP, "plain-http", false, "diff upgrade: reach the chart's registry or repository over plain HTTP")
	fs.BoolVar(&o.registry.Insecure, "insecure-skip-tls-verify", false, "diff upgrade: do not verify the chart registry's TLS certificate")
	fs.StringVar(&o.registry.CAFile, "ca-file", "", "diff upgrade: CA bundle for the chart registry or repository")
	fs.StringVar(&o.registry.CertFile, "cert-file", "", "diff upgrade: client certificate for the chart registry or repository")
	fs.StringVar(&o.registry.KeyFile, "key-file", "", "diff upgrade: client key for the chart registry or repository")
	fs.StringVar(&o.registry.Username, "username", "", "diff upgrade: chart repository user name")
	fs.StringVar(&o.registry.Password, "password", "", "diff upgrade: chart repository password")
	fs.BoolVar(&o.registry.PassCredentials, "pass-credentials", false, "diff upgrade: pass credentials to all domains")
	o.kube.BindFlags(fs)
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
	rules, err := o.ignoreRules()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	ctx := context.Background()
	o.manifestOut = out
	var fileTargets []hrTarget
	if fs.Arg(0) == "helmrelease" && len(o.files) > 0 {
		// Bad files fail before the cluster is asked anything.
		if fileTargets, err = o.hrTargets(ctx, nil, fs.Arg(1), in); err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
	}
	cfg, err := action.NewConfiguration(o.kube.options(), nil)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	o.cfg = cfg
	cl, err := cfg.Live(ctx)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	if o.stats {
		defer func() { fmt.Fprintf(errOut, "helm-drift diff: %s\n", cl.Counts) }()
	}
	if fs.Arg(0) == "helmrelease" {
		targets := fileTargets
		switch {
		case len(fileTargets) > 0:
			fileTargets[0].stream.Cluster = cl // the one stream the files make
		case o.all || o.allNamespaces:
			targets, err = o.allHelmReleases(ctx, cl)
		default:
			targets, err = o.hrTargets(ctx, cl, fs.Arg(1), in)
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
			return o.runHelmReleases(ctx, cl, targets, rules, out, errOut)
		}
		return o.report(func() (*diff.Report, error) { return o.diffHelmRelease(ctx, cl, targets[0], rules) }, out, errOut)
	}
	if o.all || o.allNamespaces {
		return o.runAll(ctx, cl, rules, out, errOut)
	}
	if fs.Arg(0) == "upgrade" {
		return o.report(func() (*diff.Report, error) { return o.diffUpgrade(ctx, cl, fs.Arg(1), fs.Arg(2), rules, errOut) }, out, errOut)
	}
	return o.report(func() (*diff.Report, error) { return o.diffRelease(ctx, cl, o.namespace, fs.Arg(1), rules) }, out, errOut)
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
	if err := diff.Write(out, []*diff.Report{rep}, o.output, o.colour(out)); err != nil {
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
	if rep.Drift() {
		return ExitDrift
	}
	return ExitOK
}

func (o *diffOptions) validate(fs *pflag.FlagSet) error {
	switch {
	case o.output == outputManifest && (fs.Arg(0) != "upgrade" && fs.Arg(0) != "helmrelease" || o.all || o.allNamespaces):
		return fmt.Errorf("-o manifest goes with \"diff upgrade\" and \"diff helmrelease NAME\" (one release): it prints what would be installed")
	case o.output != outputManifest && !slices.Contains(diff.Formats, o.output):
		return fmt.Errorf("--output %q: want one of %s, or manifest", o.output, strings.Join(diff.Formats, ", "))
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
	if o.workers < 1 || o.workers > 64 {
		return fmt.Errorf("--concurrency %d: want 1 to 64", o.workers)
	}
	all := o.all || o.allNamespaces
	switch {
	case fs.NArg() == 0:
		return fmt.Errorf("want \"diff upgrade RELEASE CHART\", \"diff release RELEASE\" or \"diff helmrelease NAME\"")
	case len(o.files) > 0 && fs.Arg(0) != "helmrelease":
		return fmt.Errorf("--file goes with \"diff helmrelease\"")
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
	case fs.Arg(0) == "upgrade" && fs.NArg() != 3:
		return fmt.Errorf("want \"diff upgrade RELEASE CHART\"")
	case fs.Arg(0) != "release" && fs.Arg(0) != "upgrade":
		return fmt.Errorf("unknown \"diff %s\": want \"diff upgrade\", \"diff release\" or \"diff helmrelease\"", fs.Arg(0))
	}
	misplaced := refusedIn(fs)
	if fs.Arg(0) == "helmrelease" {
		fs.Visit(func(f *pflag.Flag) {
			if misplaced == nil && f.Name != "plain-http" && (strings.HasPrefix(f.Usage, "diff upgrade:") || strings.HasPrefix(f.Usage, ignoredUsage)) {
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

// colour reports whether the table may use colour: out is a terminal and NO_COLOR is unset.
func (o *diffOptions) colour(out io.Writer) bool {
	if o.noColor || o.output != "table" || os.Getenv("NO_COLOR") != "" {
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

// measure measures desired against the cluster, starting from the release's stored revision rel.
func (o *diffOptions) measure(ctx context.Context, cl *live.Client, rel *release.Release, desired string, rules []flux.IgnoreRule) (*diff.Report, error) {
	return diff.Run(ctx, cl, diff.Input{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, Desired: desired,
		Previous: rel.Manifest, Rules: rules, Normalize: o.normalize, Workers: o.workers})
}

func (o *diffOptions) diffRelease(ctx context.Context, cl *live.Client, namespace, name string, rules []flux.IgnoreRule) (*diff.Report, error) {
	cfg, err := o.cfg.Helm3(namespace)
	if err != nil {
		return nil, err
	}
	rel, err := helmaction.NewGet(cfg).Run(name)
	if err != nil {
		return nil, action.ReleaseError(namespace, name, err)
	}
	return o.measure(ctx, cl, rel, rel.Manifest, rules)
}

// diffUpgrade renders what "helm upgrade RELEASE CHART" with the same flags would install
// (a dry-run of the Helm SDK's upgrade action, twice: what differs between the two renders is
// unstable) with the engine of the Helm that wrote the release, and measures it.
func (o *diffOptions) diffUpgrade(ctx context.Context, cl *live.Client, name, chartRef string, rules []flux.IgnoreRule, errOut io.Writer) (*diff.Report, error) {
	cfg, err := o.cfg.Helm3(o.namespace)
	if err != nil {
		return nil, err
	}
	last, err := helmaction.NewGet(cfg).Run(name)
	install := false
	var eng engine
	switch {
	case err != nil && o.install && errors.Is(err, driver.ErrReleaseNotFound):
		// helm upgrade --install of a release that does not exist: its install.
		install, last = true, &release.Release{Name: name, Namespace: o.namespace}
		eng = engine{engineHelm3, "an install: the Helm 3 CLI's default; --engine helm4 for Helm 4's"}
		if o.engine == engineHelm4 || o.serverSide == "true" {
			eng = engine{engineHelm4, "an install with --engine helm4 or --server-side true"}
		}
	case err != nil:
		return nil, action.ReleaseError(o.namespace, name, err)
	default:
		if eng, err = o.chooseEngine(cl, name); err != nil {
			return nil, err
		}
	}
	spec, err := o.upgradeSpec(name, chartRef, install, errOut)
	if err != nil {
		return nil, err
	}
	first, second, err := o.cfg.RenderUpgrade(ctx, eng.name, spec)
	if err != nil {
		return nil, err
	}
	if o.output == outputManifest {
		return nil, writeManifest(o.manifestOut, first)
	}
	return diff.Run(ctx, cl, diff.Input{Release: last.Name, Namespace: last.Namespace, Revision: last.Version, Desired: first,
		Previous: last.Manifest, Rerender: second, CountUnstable: o.countUnstable, Engine: eng.String(),
		Apply: o.applyOverride(), ForceConflicts: o.forceConflicts, ForceReplace: o.force, TakeOwnership: o.takeOwnership,
		Rules: rules, Normalize: o.normalize, Workers: o.workers})
}

// upgradeSpec is what these flags ask helm upgrade.
func (o *diffOptions) upgradeSpec(name, chartRef string, install bool, errOut io.Writer) (action.UpgradeSpec, error) {
	spec := action.UpgradeSpec{Release: name, Namespace: o.namespace, Chart: chartRef, Install: install,
		Values: o.valueOpts, Version: o.version, Repo: o.repo, Devel: o.devel, Registry: o.registry,
		Verify: o.verify, Keyring: o.keyring, Lookup: o.lookup, EnableDNS: o.enableDNS, SkipSchemaValidation: o.skipSchema,
		ReuseValues: o.reuseValues, ResetValues: o.resetValues, ResetThenReuseValues: o.resetThenReuse,
		DependencyUpdate: o.dependencyUpdate, Kubeconfig: o.kube.kubeconfig, KubeContext: o.kube.kubeContext, Log: errOut}
	if o.postRenderer != "" {
		pr, err := action.ResolvePostRenderer(o.postRenderer, o.postRendererArgs)
		if err != nil {
			return spec, err
		}
		spec.PostRenderer = pr
	}
	return spec, nil
}

// applyOverride maps --server-side onto how the upgrade writes the objects ("" for auto).
func (o *diffOptions) applyOverride() string {
	switch o.serverSide {
	case "true":
		return diff.ApplyServerSide
	case "false":
		return diff.ApplyClientSide
	}
	return ""
}

// runAll measures every deployed release of the namespace (or of all), one summary row each.
func (o *diffOptions) runAll(ctx context.Context, cl *live.Client, rules []flux.IgnoreRule, out, errOut io.Writer) int {
	ns := o.namespace
	if o.allNamespaces {
		ns = ""
	}
	cfg, err := o.cfg.Helm3(ns)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	list := helmaction.NewList(cfg)
	list.AllNamespaces = o.allNamespaces
	list.StateMask = helmaction.ListDeployed | helmaction.ListFailed | helmaction.ListPendingInstall | helmaction.ListPendingUpgrade | helmaction.ListPendingRollback
	rels, err := list.Run()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: listing releases: %v\n", err)
		return ExitUnmeasured
	}
	rows, unmeasured := o.summaries(len(rels), func(i int) (*diff.Report, diff.SummaryRow, string, error) {
		rel := rels[i]
		rep, err := o.measure(ctx, cl, rel, rel.Manifest, rules)
		return rep, diff.SummaryRow{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version}, rel.Namespace + "/" + rel.Name, err
	})
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Namespace+"/"+rows[i].Release < rows[j].Namespace+"/"+rows[j].Release
	})
	return o.writeSummary(rows, unmeasured, func(r diff.SummaryRow) string { return r.Namespace + "/" + r.Release }, out, errOut)
}

// summaries measures n releases concurrently (a quarter of --concurrency at a time), one
// summary row each. measure(i) returns the report, the row to show when it fails (with the
// error filled in here) and the name its unmeasured objects are listed under
// ("NAME: object: error").
func (o *diffOptions) summaries(n int, measure func(i int) (*diff.Report, diff.SummaryRow, string, error)) ([]diff.SummaryRow, []string) {
	rows := make([]diff.SummaryRow, n)
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		unmeasured []string
	)
	sem := make(chan struct{}, max(1, o.workers/4))
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep, failed, name, err := measure(i)
			if err != nil {
				failed.Error = err.Error()
				rows[i] = failed
				return
			}
			rows[i] = diff.Summarise(rep)
			for _, obj := range rep.Objects {
				if obj.Error != "" {
					mu.Lock()
					unmeasured = append(unmeasured, fmt.Sprintf("%s: %s: %s", name, obj.Object, obj.Error))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return rows, unmeasured
}

// writeSummary prints the summary rows of a --all run, then on stderr what could not be
// measured (name says which release or HelmRelease a row is), and returns the exit code: 3 if
// anything could not be measured, else 2 if any row shows drift, else 0.
func (o *diffOptions) writeSummary(rows []diff.SummaryRow, unmeasured []string, name func(diff.SummaryRow) string, out, errOut io.Writer) int {
	if err := diff.WriteSummary(out, rows, o.output); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	code := ExitOK
	sort.Strings(unmeasured)
	for _, u := range unmeasured {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s\n", u)
		code = ExitUnmeasured
	}
	for _, r := range rows {
		switch {
		case r.Error != "":
			fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", name(r), r.Error)
			code = ExitUnmeasured
		case code == ExitOK && (r.Divergences > 0 || r.PendingDeletions > 0 || r.Unmeasured > 0):
			code = ExitDrift
		}
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
