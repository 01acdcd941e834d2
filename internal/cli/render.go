package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/config"
	"github.com/helm-drift/helm-drift/internal/owners"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// MaxInput bounds the stream render reads: a rendered release is far smaller; a larger input
// is a mistake (or an attack) and is refused rather than held in memory.
const MaxInput = 256 << 20

const renderUsage = `Reads a rendered manifest stream on stdin and writes it to stdout with Flux spec.driftDetection
set on the HelmReleases a rule selects; every other document comes back byte-for-byte. On any
error it names the document and the rule, exits 1 and writes nothing to stdout: Helm never
applies half a stream. It refuses a stream in which one object has two owners (--owners), and
with --self appends a self-managing OCIRepository and HelmRelease for the release itself.

Selectors: podinfo (a name, any namespace), flux-system/podinfo, flux-system/* (a glob on the
namespace, the name or both), label:app=web (a label selector). Flag rules come after the
config file's, so flags win; a driftDetection the chart sets is kept unless the rule says
override.

Usage:
  helm template my-release ./chart | helm-drift render --drift-detection 'flux-system/*=enabled'
  helm install my-release ./chart --post-renderer helm-drift \
      --post-renderer-args render --post-renderer-args --drift-detection=podinfo=enabled   (Helm 3)
  helm install my-release ./chart --post-renderer drift-render \
      --post-renderer-args --drift-detection=podinfo=enabled                              (Helm 4)

Exit codes: 0 rendered; 1 an error (nothing written to stdout).
Rules, the config file, --self, every flag with a real run: ` + docsURL + `render.md
`

// renderOptions are the flags of `render`.
type renderOptions struct {
	driftDetection []string
	// ignoreFromCluster adds the ignore rules suggested from the live objects' managedFields.
	ignoreFromCluster bool
	override          bool
	configFile        string
	namespace         string
	strict            bool
	verbose           bool
	owners            string
	release           string
	cluster           bool
	deep              bool
	chartDirs         []string
	kube              kubeOptions
	self              transform.Self
	selfOn            bool
	selfBracket       string
	install           bool
	changed           func(string) bool
}

// BindFlags registers the render flags on fs.
func (o *renderOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.driftDetection, "drift-detection", nil, "SELECTOR=MODE: set spec.driftDetection.mode (enabled, warn, disabled) on the HelmReleases SELECTOR matches; repeatable")
	fs.BoolVar(&o.override, "override", false, "let --drift-detection rules replace a driftDetection the chart already sets")
	fs.BoolVar(&o.ignoreFromCluster, "ignore-from-cluster", false, "with --drift-detection: add to each HelmRelease's driftDetection.ignore the rules diff --suggest-ignore suggests for its release's live objects (fields a controller owns: an HPA's replicas, an injected caBundle, an aggregated ClusterRole's rules), a warning naming each rule and its manager; without cluster access, or before the first install, a warning and no rules, never a failure")
	fs.StringVar(&o.configFile, "config", "", "a helm-drift config file (apiVersion: helm-drift/v1, kind: Config) with rules, ignore rules and override")
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace: the namespace of a HelmRelease that names none")
	fs.BoolVar(&o.strict, "strict", false, "a rule that matches no HelmRelease is an error, not a warning")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "say on stderr what each rule did to each HelmRelease, and which rule won")
	fs.StringVar(&o.owners, "owners", "error", "the second-owner check on the stream: error (fail before Helm applies anything), warn (report on stderr), off")
	fs.StringVar(&o.release, "release", "", "the release being installed (named in messages; needed by --cluster)")
	fs.BoolVar(&o.cluster, "cluster", false, "the second-owner check also reads the live cluster: objects another release, no release, or a Flux HelmRelease owns fail the render (needs --release)")
	fs.BoolVar(&o.deep, "deep", false, "the second-owner check also renders each HelmRelease's chart and fails on an object two releases render (see owners --help)")
	fs.StringArrayVar(&o.chartDirs, "chart-dir", nil, "NAME=PATH: with --deep, the chart of HelmRelease NAME (namespace/name or name) or of chart NAME is at PATH; repeatable")
	fs.BoolVar(&o.selfOn, "self", false, "append the self-management pair: an OCIRepository and a HelmRelease that write this very release (needs --release, --namespace, --self-repository)")
	fs.StringVar(&o.self.Repository, "self-repository", "", "with --self: the OCI repository the chart is pushed to, oci://host/path")
	fs.StringVar(&o.self.ChartName, "chart-name", "", "with --self: the chart's name (default: from the rendered helm.sh/chart labels)")
	fs.StringVar(&o.self.ChartVersion, "chart-version", "", "with --self: the chart's version (default: from the rendered helm.sh/chart labels)")
	fs.StringVar(&o.self.VersionRange, "self-version-range", "", "with --self: the OCIRepository's semver range (default: >=VERSION <NEXT-MAJOR.0.0)")
	fs.StringVar(&o.self.Interval, "self-interval", "", "with --self: reconcile interval of the pair (default 10m)")
	fs.StringVar(&o.self.ServiceAccount, "self-service-account", "", "with --self: the service account helm-controller impersonates for the release")
	fs.StringVar(&o.self.ValuesSecret, "self-values-secret", "", "with --self: the Secret (key values.yaml) holding the release's user-supplied values (default RELEASE-values)")
	fs.BoolVar(&o.self.Insecure, "self-insecure", false, "with --self: the registry speaks plain HTTP")
	fs.StringVar(&o.selfBracket, "self-bracket", "cli", "with --self: how the bracket ends: cli (run \"helm drift self resume\"), job (Helm 3 and 4: a detached resumer Job in the manifest waits until the revision is deployed, then resumes; needs --self-hook-image) or hooks (Helm 4 only, kept for compatibility: rendered as job, since a hook would resume while the revision is still pending)")
	fs.StringVar(&o.self.HookImage, "self-hook-image", "", "with --self-bracket job: an image with helm-drift on its PATH, for the resumer Job (default for a released build: its own image, as helm drift version prints)")
	fs.StringVar(&o.self.ResumerTimeout, "self-resumer-timeout", "", "with --self-bracket job: how long the resumer waits for the revision to be deployed before it gives up without resuming (default 10m)")
	fs.BoolVar(&o.self.Guard, "self-guard", true, "with --self: render the CLI guard, a ValidatingAdmissionPolicy denying new revisions of the release to anyone but helm-controller's writer (the --self-service-account, else --self-controller-identity), so the Helm CLI is day-0 only; false leaves the CLI able to write revisions helm-controller then reverts")
	fs.StringVar(&o.self.ControllerIdentity, "self-controller-identity", selfmanaged.DefaultControllerIdentity, "with --self: the user name helm-controller runs as, the writer the guard lets through when no --self-service-account is given")
	fs.BoolVar(&o.install, "install", false, "with --self: this render is an install: the HelmRelease is rendered suspended (the bracket that \"helm drift self resume\" ends)")
	o.kube.BindFlags(fs)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func runRender(args []string, in io.Reader, out, errOut io.Writer) int {
	var o renderOptions
	fs := pflag.NewFlagSet("render", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, renderUsage, args, out, errOut); done {
		return code
	}
	o.changed = fs.Changed
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "helm-drift render: unexpected argument %q: render reads the stream on stdin and takes only flags\n", fs.Arg(0))
		return ExitError
	}
	collectFor(false)
	if err := o.render(in, out, errOut); err != nil {
		fmt.Fprintf(errOut, "helm-drift render: %v\n", err)
		return ExitError
	}
	return ExitOK
}

// rules builds the drift detection rules: config file rules first, then flag rules.
func (o *renderOptions) rules() ([]transform.Rule, error) {
	var rules []transform.Rule
	if o.configFile != "" {
		f, err := config.Load(o.configFile)
		if err != nil {
			return nil, err
		}
		if rules, err = f.Rules(o.configFile); err != nil {
			return nil, err
		}
		o.applySelfConfig(f.Self)
	}
	for _, v := range o.driftDetection {
		r, err := transform.ParseFlagRule(v)
		if err != nil {
			return nil, err
		}
		if o.override {
			override := true
			r.Override = &override
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// applySelfConfig takes the config file's self settings where no flag set them.
func (o *renderOptions) applySelfConfig(c *config.Self) {
	if c == nil {
		return
	}
	set := func(flag string, dst *string, v string) {
		if v != "" && (o.changed == nil || !o.changed(flag)) {
			*dst = v
		}
	}
	set("self-repository", &o.self.Repository, c.Repository)
	set("chart-name", &o.self.ChartName, c.ChartName)
	set("chart-version", &o.self.ChartVersion, c.ChartVersion)
	set("self-version-range", &o.self.VersionRange, c.VersionRange)
	set("self-interval", &o.self.Interval, c.Interval)
	set("self-service-account", &o.self.ServiceAccount, c.ServiceAccount)
	set("self-values-secret", &o.self.ValuesSecret, c.ValuesSecret)
	if c.Insecure && (o.changed == nil || !o.changed("self-insecure")) {
		o.self.Insecure = true
	}
}

func (o *renderOptions) render(in io.Reader, out, errOut io.Writer) error {
	rules, err := o.rules()
	if err != nil {
		return err
	}
	if err := ownersMode(o.owners).validate(); err != nil {
		return err
	}
	if o.cluster && o.owners == "off" {
		return errors.New("--cluster is part of the second-owner check, which --owners off switches off")
	}
	if o.deep && o.owners == "off" {
		return errors.New("--deep is part of the second-owner check, which --owners off switches off")
	}
	if o.cluster && o.release == "" {
		return errors.New("--cluster needs --release NAME: it tells this release's objects from another's")
	}
	if !o.selfOn && o.changed != nil {
		for _, f := range []string{"self-repository", "chart-name", "chart-version", "self-version-range", "self-interval", "self-service-account", "self-values-secret", "self-insecure", "self-bracket", "self-hook-image", "self-resumer-timeout", "install", "self-guard", "self-controller-identity"} {
			if o.changed(f) {
				return fmt.Errorf("--%s is a setting of --self, which is not given", f)
			}
		}
	}
	input, err := readInput(in)
	if err != nil {
		return err
	}
	drift := &transform.DriftDetection{Rules: rules, Namespace: o.namespace, Strict: o.strict, Verbose: o.verbose, Log: errOut}
	if o.ignoreFromCluster && len(rules) == 0 {
		return errors.New("--ignore-from-cluster adds ignore rules to the driftDetection that --drift-detection (or the config file) sets; no rule selects a HelmRelease")
	}
	work := &action.PostRender{Drift: drift, IgnoreFromCluster: o.ignoreFromCluster, Release: o.release, Namespace: o.namespace,
		Install: o.install, Verbose: o.verbose, Kube: o.kube.connection(), Warn: errOut}
	if o.selfOn {
		o.self.Release, o.self.Namespace, o.self.Drift = o.release, o.namespace, drift
		if err := o.self.Validate(); err != nil {
			return err
		}
		if (o.selfBracket == "hooks" || o.selfBracket == selfmanaged.BracketJob) && o.self.HookImage == "" {
			o.self.HookImage = defaultHookImage() // a released build's own image ("" for another build)
		}
		switch {
		case o.selfBracket == "hooks" && o.self.HookImage == "":
			return errors.New("--self-bracket hooks needs --self-hook-image: an image with helm-drift on its PATH for the resumer Job (a released helm-drift defaults to its own image; this build is not one: see helm drift version)")
		case o.selfBracket == selfmanaged.BracketJob && o.self.HookImage == "":
			return errors.New("--self-bracket job needs --self-hook-image: an image with helm-drift on its PATH for the resumer Job (a released helm-drift defaults to its own image; this build is not one: see helm drift version)")
		case o.selfBracket == selfmanaged.BracketCLI && o.self.HookImage != "":
			return errors.New("--self-hook-image is for --self-bracket job or hooks")
		case o.selfBracket != "hooks" && o.selfBracket != selfmanaged.BracketCLI && o.selfBracket != selfmanaged.BracketJob:
			return fmt.Errorf("--self-bracket %q: want cli, job or hooks", o.selfBracket)
		case o.self.ResumerTimeout != "" && o.selfBracket == selfmanaged.BracketCLI:
			return errors.New("--self-resumer-timeout is for --self-bracket job")
		}
		if o.self.ResumerTimeout != "" {
			if d, err := time.ParseDuration(o.self.ResumerTimeout); err != nil || d <= 0 {
				return fmt.Errorf("--self-resumer-timeout %q: want a positive duration such as 10m", o.self.ResumerTimeout)
			}
		}
		o.self.Bracket = o.selfBracket
		if o.selfBracket == selfmanaged.BracketHooks {
			fmt.Fprintln(errOut, "helm-drift: --self-bracket hooks: rendered as the detached resumer Job of --self-bracket job, not as a hook: a post-install hook runs while the revision is still pending, and resuming then gives the release two writers")
		}
		// Helm 3 does not tell a post-renderer the release namespace: a default here would
		// render a pair that installs a second copy of the chart there.
		if (o.changed == nil || !o.changed("namespace")) && os.Getenv("HELM_NAMESPACE") == "" {
			return fmt.Errorf("--self: the release namespace is not known for certain (Helm 3 does not pass it to a post-renderer, and a default would make helm-controller install a second copy of the chart there): add --namespace=NS with the -n of helm install (Helm 3: --post-renderer-args --namespace=NS), or set HELM_NAMESPACE")
		}
		work.Self = &o.self
	}
	if o.owners != "off" {
		severity := owners.SeverityError
		if o.owners == "warn" {
			severity = owners.SeverityWarn
		}
		work.Owners = &action.Owners{Options: owners.Options{Namespace: o.namespace, Release: o.release, Severity: severity},
			Cluster: o.cluster, Deep: o.deep, ChartDirs: o.chartDirs, Kube: work.Kube}
	}
	result, err := work.Run(input)
	if err != nil {
		return err
	}
	if _, err := out.Write(result); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// readInput reads the whole stream from stdin, refusing a terminal and anything past MaxInput.
func readInput(in io.Reader) ([]byte, error) {
	if f, ok := in.(*os.File); ok {
		// A terminal, not any character device: /dev/null (or a closed stdin, which the Go
		// runtime opens as /dev/null) is an empty stream.
		if term.IsTerminal(int(f.Fd())) {
			return nil, errors.New("stdin is a terminal: pipe a rendered stream in (helm template ... | helm-drift render ...) or use render as Helm's --post-renderer")
		}
	}
	data, err := io.ReadAll(io.LimitReader(in, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > MaxInput {
		return nil, fmt.Errorf("stdin holds more than %d MiB; render refuses a stream that large", MaxInput>>20)
	}
	return data, nil
}
