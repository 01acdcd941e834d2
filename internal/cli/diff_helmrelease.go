package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
)

const diffHelmReleaseUsage = `Compares what helm-controller (v1.6) would install for a Flux HelmRelease now with the live
cluster, field by field, and says first what its next reconcile will do (upgrade, drift
correction or nothing), then per row whether that reconcile resolves it.

Usage:
  helm drift diff helmrelease NAME|NAMESPACE/NAME [flags]
  helm drift diff helmrelease --all [-A] [flags]
  helm drift diff helmrelease --file hr.yaml [--file ...] [NAME] [flags]

Rendered as helm-controller renders: its source's artifact, verified against its digest; its
values and valuesFrom; its post-renderers; the Helm 4 SDK; lookup answered as its service
account. --file diffs a HelmRelease as written in a Git checkout (a pull request's preview):
objects beside it in the files are read from there first. Exit codes: 0 no drift, 2 drift, 3
could not measure, 1 an error.

Examples:
  helm drift diff helmrelease shop/web
  helm drift diff helmrelease --file clusters/prod/apps.yaml -o github
  helm drift diff helmrelease -A --exit-code-on drift

The next reconcile, --file, impersonation, the RBAC it needs: ` + docsURL + `diff-helmrelease.md
`

// diffHelmReleaseCmd is "diff helmrelease": a Flux HelmRelease, rendered as helm-controller
// renders it, against the cluster.
type diffHelmReleaseCmd struct {
	diffCommon
	allFlags
	// hr are the action's own options, bound to the flags.
	hr    action.HelmReleaseOptions
	files []string
}

func (d *diffHelmReleaseCmd) usage() string { return diffHelmReleaseUsage }

func (d *diffHelmReleaseCmd) bind(fs *pflag.FlagSet) {
	d.diffCommon.bind(fs, true)
	d.allFlags.bind(fs, "HelmRelease")
	fs.StringArrayVar(&d.files, "file", nil, "a YAML file (- for stdin) holding the HelmRelease as written in Git, and any source, ConfigMap or Secret it reads that the change adds or edits; repeatable")
	fs.StringVar(&d.hr.DefaultServiceAccount, "default-service-account", "", "helm-controller's --default-service-account: the account a HelmRelease without spec.serviceAccountName renders as (its lookup calls are answered as the account, impersonated, when you may impersonate it; spec.serviceAccountName always is)")
	fs.BoolVar(&d.hr.CountUnstable, "count-unstable", false, "count as drift the fields on which two renders of the same inputs disagree (random values, timestamps); by default they are flagged unstable and not counted")
	fs.BoolVar(&d.hr.PlainHTTP, "plain-http", false, "reach a source's registry over plain HTTP")
	d.kube.BindFleetFlags(fs)
}

func (d *diffHelmReleaseCmd) validate(fs *pflag.FlagSet) error {
	if err := d.diffCommon.validate(!d.many()); err != nil {
		return err
	}
	if err := d.allFlags.validate(&d.kube, fs); err != nil {
		return err
	}
	switch {
	case strings.ContainsAny(d.hr.DefaultServiceAccount, ": /"):
		return fmt.Errorf("--default-service-account %q: want a service account name in the HelmRelease's namespace, as helm-controller's flag takes it", d.hr.DefaultServiceAccount)
	case d.many() && (fs.NArg() != 1 || len(d.files) > 0):
		return fmt.Errorf("diff helmrelease --all takes no name and no --file")
	case !d.many() && len(d.files) == 0 && fs.NArg() != 2:
		return fmt.Errorf("want \"diff helmrelease NAME\" (or NAMESPACE/NAME, --all, or --file FILE)")
	case fs.NArg() > 2:
		return fmt.Errorf("want \"diff helmrelease NAME\": one name")
	}
	return nil
}

// action is the diff helmrelease these flags ask for, on cfg's cluster.
func (d *diffHelmReleaseCmd) action(cfg *action.Configuration, m action.Measure) *action.DiffHelmRelease {
	return &action.DiffHelmRelease{Config: cfg, Measure: m, HelmReleaseOptions: d.hr, ManifestOnly: d.out.manifest()}
}

func (d *diffHelmReleaseCmd) run(ctx context.Context, fs *pflag.FlagSet, in io.Reader, out, errOut io.Writer) int {
	collectFor(d.many())
	var targets []action.HelmReleaseTarget
	if len(d.files) > 0 {
		// Bad files fail before the cluster is asked anything.
		var err error
		if targets, err = d.readFiles(fs.Arg(1), in); err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
	}
	name := func(r diff.SummaryRow) string { return "HelmRelease " + r.HelmRelease }
	if d.kube.fleet() {
		return d.runFleet(ctx, &d.allFlags, "HelmReleases measured", func(ctx context.Context, cfg *action.Configuration, m action.Measure) (*action.Summary, error) {
			return d.action(cfg, m).RunAllIn(ctx, d.listNamespace(d.namespace))
		}, name, out, errOut)
	}
	cfg, done, code, ok := d.open(ctx, &d.allFlags, "HelmReleases measured", errOut)
	if !ok {
		return code
	}
	defer done()
	if d.many() {
		d.stream(out)
	}
	a := d.action(cfg, d.measure)
	var err error
	switch {
	case len(targets) > 0:
	case d.many():
		targets, err = a.List(ctx, d.listNamespace(d.namespace))
	default:
		ns, name := d.namespace, fs.Arg(1)
		if a, b, ok := strings.Cut(name, "/"); ok {
			ns, name = a, b
		}
		var t action.HelmReleaseTarget
		t, err = a.Get(ctx, ns, name)
		targets = []action.HelmReleaseTarget{t}
	}
	switch {
	case isInputError(err):
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	case err != nil:
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	case len(targets) != 1 && d.out.manifest():
		fmt.Fprintf(errOut, "helm-drift diff: -o manifest prints one HelmRelease: the files hold %d; name one (diff helmrelease --file F NAME)\n", len(targets))
		return ExitError
	case len(targets) != 1 || d.many():
		s, err := a.RunAll(ctx, targets)
		return d.writeSummary(s, err, name, out, errOut)
	}
	return d.report(d.printManifest(func() (*action.Result, error) { return a.Run(ctx, targets[0]) }, out), out, errOut)
}

// readFiles reads --file's HelmReleases (- for stdin), the one named arg if set.
func (d *diffHelmReleaseCmd) readFiles(arg string, in io.Reader) ([]action.HelmReleaseTarget, error) {
	files := make([]action.File, 0, len(d.files))
	for _, f := range d.files {
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
	return action.HelmReleaseFiles(files, d.namespace, arg)
}
