package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
)

const diffReleaseUsage = `Compares the manifest Helm stored for a release's latest revision (what helm-controller's
drift detection compares) with the live cluster, field by field, and says per row what an
upgrade would do.

Usage:
  helm drift diff release RELEASE [flags]
  helm drift diff release --all [-A] [flags]
  helm drift diff release -A --kube-context A --kube-context B | --all-contexts

--all (-A: in every namespace) gives one summary row per release and reads each kind in each
namespace once, whatever the number of releases. Several contexts are measured at the same
time into one summary with a CONTEXT column; a cluster that cannot be measured is a row saying
why. Exit codes: 0 no drift, 2 drift, 3 could not measure, 1 an error.

Examples:
  helm drift diff release web -n shop
  helm drift diff release web -n shop -o diff --normalize offline
  helm drift diff release -A --all-contexts -o json

Classes, normalisation, output formats, the RBAC it needs: ` + docsURL + `diff.md
`

// diffReleaseCmd is "diff release": the stored release against the cluster.
type diffReleaseCmd struct {
	diffCommon
	allFlags
}

func (d *diffReleaseCmd) usage() string { return diffReleaseUsage }

func (d *diffReleaseCmd) bind(fs *pflag.FlagSet) {
	d.diffCommon.bind(fs, false)
	d.allFlags.bind(fs, "release")
	d.kube.BindFleetFlags(fs)
}

func (d *diffReleaseCmd) validate(fs *pflag.FlagSet) error {
	if err := d.diffCommon.validate(false); err != nil {
		return err
	}
	if err := d.allFlags.validate(&d.kube, fs); err != nil {
		return err
	}
	switch {
	case d.many() && fs.NArg() != 1:
		return fmt.Errorf("diff release --all takes no release name")
	case !d.many() && fs.NArg() != 2:
		return fmt.Errorf("want \"diff release RELEASE\" (or --all)")
	}
	return nil
}

func (d *diffReleaseCmd) run(ctx context.Context, fs *pflag.FlagSet, _ io.Reader, out, errOut io.Writer) int {
	collectFor(d.many())
	name := func(r diff.SummaryRow) string { return r.Namespace + "/" + r.Release }
	if d.kube.fleet() {
		return d.runFleet(ctx, &d.allFlags, "releases measured", func(ctx context.Context, cfg *action.Configuration, m action.Measure) (*action.Summary, error) {
			return (&action.DiffRelease{Config: cfg, Measure: m, Namespace: d.namespace}).RunAll(ctx, d.allNamespaces)
		}, name, out, errOut)
	}
	cfg, done, code, ok := d.open(ctx, &d.allFlags, "releases measured", errOut)
	if !ok {
		return code
	}
	defer done()
	if d.many() {
		d.stream(out)
	}
	r := &action.DiffRelease{Config: cfg, Measure: d.measure, Namespace: d.namespace}
	if d.many() {
		s, err := r.RunAll(ctx, d.allNamespaces)
		return d.writeSummary(s, err, name, out, errOut)
	}
	return d.report(func() (*diff.Report, error) { return r.Run(ctx, fs.Arg(1)) }, out, errOut)
}
