package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
)

const diffUpgradeUsage = `Compares what "helm upgrade RELEASE CHART" with the same flags would install with the live
cluster, field by field, and says per row what the upgrade would do (UPGRADE), who moved the
field (MOVED: the cluster, or the chart), and which objects the API server would refuse.

Usage:
  helm drift diff upgrade RELEASE CHART [-f values.yaml] [--set k=v] [--version V] [flags]
  helm drift diff upgrade [diff flags] -- RELEASE CHART [the deploy's helm upgrade flags]

Rendered in-process with the Helm SDK that wrote the release (values reused as helm upgrade
reuses them, the post-renderer run, lookup answered by the cluster), twice: a field the two
renders disagree on (a random password) is flagged unstable, not drift. After "--", a deploy's
own helm upgrade argument list; flags that change how Helm applies or waits (--wait, --atomic,
--timeout, ...) are accepted and ignored. Exit codes: 0 no drift, 2 drift (--exit-code-on
drift: only what the cluster moved), 3 could not measure, 1 an error.

Examples:
  helm drift diff upgrade web ./chart -n shop --set image=nginx:1.28
  helm drift diff upgrade web ./chart -n shop -o diff -C 5
  helm drift diff upgrade -o github -- web ./chart -n shop -f prod.yaml --atomic --timeout 10m

Classes, predictions, WILL-FAIL, normalisation, output formats: ` + docsURL + `diff.md
`

// diffUpgradeCmd is "diff upgrade": what helm upgrade would install against the cluster. Its
// flags are bound straight onto the action's own options.
type diffUpgradeCmd struct {
	diffCommon
	// up holds the action's options, bound to the flags; Config, Measure and the release's
	// name, namespace and chart are set at run.
	up               action.DiffUpgrade
	postRenderer     string
	postRendererArgs []string
	ignored          ignoredFlags
}

func (d *diffUpgradeCmd) usage() string { return diffUpgradeUsage }

func (d *diffUpgradeCmd) bind(fs *pflag.FlagSet) {
	d.diffCommon.bind(fs, true)
	s := &d.up.Spec
	fs.StringArrayVarP(&s.Values.ValueFiles, "values", "f", nil, "values file or URL, as helm upgrade -f; repeatable")
	fs.StringArrayVar(&s.Values.Values, "set", nil, "key=value, as helm upgrade --set; repeatable")
	fs.StringArrayVar(&s.Values.StringValues, "set-string", nil, "key=value as a string; repeatable")
	fs.StringArrayVar(&s.Values.JSONValues, "set-json", nil, "key=JSON value; repeatable")
	fs.StringArrayVar(&s.Values.FileValues, "set-file", nil, "key=path, the value read from the file; repeatable")
	fs.StringArrayVar(&s.Values.LiteralValues, "set-literal", nil, "key=value, the value taken literally (no commas, escapes or types), as helm upgrade --set-literal; repeatable")
	fs.BoolVar(&s.SkipSchemaValidation, "skip-schema-validation", false, "do not validate the values against the chart's values.schema.json, as helm upgrade --skip-schema-validation")
	fs.BoolVar(&s.DependencyUpdate, "dependency-update", false, "as helm upgrade --dependency-update: fetch the dependencies missing from the chart's charts/ directory first (written there, as helm writes them)")
	fs.BoolVarP(&d.up.Install, "install", "i", false, "as helm upgrade --install: a release that does not exist yet is rendered as its install (every object a creation; an object already in the cluster that Helm would refuse to adopt is reported REFUSED)")
	fs.BoolVar(&d.up.TakeOwnership, "take-ownership", false, "render as helm upgrade --take-ownership, which adopts objects another release or nobody owns instead of refusing them")
	fs.StringVar(&d.up.ServerSide, "server-side", "auto", "Helm 4's apply method: true (server-side apply), false (client-side), auto (as the release was written); the predictions follow it")
	fs.BoolVar(&d.up.ForceConflicts, "force-conflicts", false, "as Helm 4's helm upgrade --force-conflicts: a server-side apply takes fields other managers own; the predictions follow it")
	fs.BoolVar(&d.up.Force, "force", false, "as helm upgrade --force (Helm 3) / --force-replace (Helm 4): objects are replaced, so every row is resolved")
	fs.BoolVar(&d.up.Force, "force-replace", false, "the Helm 4 name of --force")
	fs.BoolVar(&d.up.SkipCRDs, "skip-crds", false, "as helm upgrade --skip-crds: the chart's crds/ are left out (an --install creates none of them with it, and helm upgrade never touches them); without it they are compared with the cluster's")
	d.ignored.bind(fs)
	bindRefused(fs)
	fs.BoolVar(&s.Verify, "verify", false, "as helm upgrade --verify: verify the chart's provenance file before rendering it")
	fs.StringVar(&s.Keyring, "keyring", defaultKeyring(), "the public keys --verify uses, as helm upgrade --keyring")
	fs.StringVar(&s.Version, "version", "", "chart version constraint, as helm upgrade --version")
	fs.StringVar(&s.Repo, "repo", "", "chart repository URL")
	fs.BoolVar(&s.Devel, "devel", false, "consider development versions too")
	fs.StringVar(&d.postRenderer, "post-renderer", "", "the post-renderer, as helm upgrade --post-renderer takes it: a path to an executable (Helm 3), or the name of a Helm 4 postrenderer/v1 plugin (else of an executable on PATH)")
	fs.StringArrayVar(&d.postRendererArgs, "post-renderer-args", nil, "an argument to the post-renderer; repeatable")
	fs.BoolVar(&s.ReuseValues, "reuse-values", false, "as helm upgrade --reuse-values")
	fs.BoolVar(&s.ResetValues, "reset-values", false, "as helm upgrade --reset-values")
	fs.BoolVar(&s.ResetThenReuseValues, "reset-then-reuse-values", false, "as helm upgrade --reset-then-reuse-values")
	fs.BoolVar(&s.Lookup, "lookup", true, "render the chart's lookup calls against the cluster, as helm upgrade does (needs get/list on what it looks up); false renders them empty, as helm template does")
	fs.BoolVar(&s.EnableDNS, "enable-dns", false, "as helm upgrade --enable-dns")
	fs.StringVar(&d.up.Engine, "engine", action.EngineAuto, "the Helm SDK that renders: auto (the one of the Helm that wrote the release: Helm 4 stores how it applied), helm3 or helm4")
	fs.BoolVar(&d.up.CountUnstable, "count-unstable", false, "count as drift the fields on which two renders of the same inputs disagree (random values, timestamps); by default they are flagged unstable and not counted")
	r := &s.Registry
	fs.BoolVar(&r.PlainHTTP, "plain-http", false, "reach the chart's registry or repository over plain HTTP")
	fs.BoolVar(&r.Insecure, "insecure-skip-tls-verify", false, "do not verify the chart registry's TLS certificate")
	fs.StringVar(&r.CAFile, "ca-file", "", "CA bundle for the chart registry or repository")
	fs.StringVar(&r.CertFile, "cert-file", "", "client certificate for the chart registry or repository")
	fs.StringVar(&r.KeyFile, "key-file", "", "client key for the chart registry or repository")
	fs.StringVar(&r.Username, "username", "", "chart repository user name")
	fs.StringVar(&r.Password, "password", "", "chart repository password")
	fs.BoolVar(&r.PassCredentials, "pass-credentials", false, "pass credentials to all domains")
	d.kube.BindOneClusterFlags(fs)
}

// diffOnlyFlags are diff upgrade's own flags, which helm upgrade does not have: they go
// before "--".
var diffOnlyFlags = []string{"output", "context", "suggest-ignore", "color", "no-color", "ignore", "ignore-file",
	"normalize", "concurrency", "stats", "exit-code-on", "request-timeout"}

func (d *diffUpgradeCmd) validate(fs *pflag.FlagSet) error {
	if err := d.diffCommon.validate(true); err != nil {
		return err
	}
	switch {
	case d.up.Force && d.up.ForceConflicts:
		return errors.New("--force (--force-replace) and --force-conflicts cannot go together, as in helm upgrade")
	case d.up.ServerSide != "auto" && d.up.ServerSide != "true" && d.up.ServerSide != "false":
		return fmt.Errorf("--server-side %q: want true, false or auto", d.up.ServerSide)
	case d.up.Engine != action.EngineAuto && d.up.Engine != action.EngineHelm3 && d.up.Engine != action.EngineHelm4:
		return fmt.Errorf("--engine %q: want auto, helm3 or helm4", d.up.Engine)
	}
	if err := d.kube.oneCluster(); err != nil {
		return err
	}
	if fs.NArg() != 3 {
		return fmt.Errorf("want \"diff upgrade RELEASE CHART\"")
	}
	return refusedIn(fs)
}

// parse parses diff upgrade's arguments and, after "--", a deploy's helm upgrade argument
// list: only helm upgrade's flags there, bound to the same options.
func (d *diffUpgradeCmd) parse(fs *pflag.FlagSet, args []string, out, errOut io.Writer) (int, bool) {
	deploy, hasDeploy := deployArgs(args)
	if hasDeploy {
		args = args[:len(args)-len(deploy)-1]
	}
	if code, done := parseFlags(fs, diffUpgradeUsage, args, out, errOut); done || !hasDeploy {
		return code, done
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(errOut, "helm-drift diff: \"--\" goes after \"diff upgrade\" and its diff flags: helm drift diff upgrade [flags] -- RELEASE CHART [helm upgrade flags]\n")
		return ExitError, true
	}
	up := pflag.NewFlagSet("diff upgrade", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(diffOnlyFlags, f.Name) {
			up.AddFlag(f)
		}
	})
	d.ignored.bindDeployOutput(up)
	if code, done := parseFlags(up, diffUpgradeUsage, deploy, out, errOut); done {
		return code, true
	}
	if err := refusedIn(up); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError, true
	}
	if up.NArg() != 2 {
		fmt.Fprintf(errOut, "helm-drift diff: after \"--\" want helm upgrade's arguments: RELEASE CHART [flags], got %d positional arguments\n", up.NArg())
		return ExitError, true
	}
	if err := fs.Parse(append([]string{"upgrade"}, up.Args()...)); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError, true
	}
	return ExitOK, false
}

func (d *diffUpgradeCmd) run(ctx context.Context, fs *pflag.FlagSet, _ io.Reader, out, errOut io.Writer) int {
	cfg, code, ok := d.connect(ctx, errOut)
	if !ok {
		return code
	}
	defer d.printStats(cfg, errOut)
	return d.report(d.printManifest(func() (*action.Result, error) {
		up, err := d.action(cfg, fs.Arg(1), fs.Arg(2), errOut)
		if err != nil {
			return nil, err
		}
		return up.Run(ctx)
	}, out), out, errOut)
}

// action is the upgrade these flags ask for, of release name to chart, on cfg's cluster.
func (d *diffUpgradeCmd) action(cfg *action.Configuration, name, chart string, errOut io.Writer) (*action.DiffUpgrade, error) {
	up := d.up
	up.Config, up.Measure, up.ManifestOnly = cfg, d.measure, d.out.manifest()
	up.Spec.Release, up.Spec.Namespace, up.Spec.Chart = name, d.namespace, chart
	up.Spec.Kubeconfig, up.Spec.KubeContext, up.Spec.Log = d.kube.kubeconfig, d.kube.context(), errOut
	if d.postRenderer != "" {
		pr, err := action.ResolvePostRenderer(d.postRenderer, d.postRendererArgs)
		if err != nil {
			return nil, err
		}
		up.Spec.PostRenderer = pr
	}
	return &up, nil
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
			err = errors.New(refusedMessage(f.Name))
		}
	})
	return err
}
