package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// allFlags are the flags of a verb that can measure every release of a namespace, of the
// cluster, or of several clusters: diff release and diff helmrelease.
type allFlags struct {
	all, allNamespaces bool
	progress           string
}

// bind registers --all, -A and --progress on fs; what names what is listed.
func (a *allFlags) bind(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&a.all, "all", false, "every "+what+" in the namespace, one summary row each")
	fs.BoolVarP(&a.allNamespaces, "all-namespaces", "A", false, "every "+what+" in every namespace (implies --all)")
	fs.StringVar(&a.progress, "progress", progressAuto, "with --all: a progress line on stderr (measured of the total, elapsed, estimate): auto (on a terminal, not in CI), always, never")
}

// many reports whether every release (HelmRelease) is asked for.
func (a *allFlags) many() bool { return a.all || a.allNamespaces }

// listNamespace is the namespace to list: ns, or every one ("") for -A.
func (a *allFlags) listNamespace(ns string) string {
	if a.allNamespaces {
		return ""
	}
	return ns
}

// validate checks --progress and the clusters asked for.
func (a *allFlags) validate(kube *kubeOptions, fs *pflag.FlagSet) error {
	if err := validProgress(a.progress); err != nil {
		return err
	}
	switch {
	case kube.fleet() && !a.many():
		return kube.oneCluster()
	case kube.allContexts && fs.Changed("kube-context"):
		return fmt.Errorf("--all-contexts measures every context of the kubeconfig: drop --kube-context, or name each context with --kube-context instead")
	}
	return nil
}

// open connects to the one cluster asked for (diffCommon.connect) and, over many releases,
// draws the progress line on errOut and hands the run its callback (c.measure.Progress);
// done clears the line and prints --stats. On failure it has printed why and returns the exit
// code.
func (c *diffCommon) open(ctx context.Context, a *allFlags, what string, errOut io.Writer) (cfg *action.Configuration, done func(), code int, ok bool) {
	if cfg, code, ok = c.connect(ctx, errOut); !ok {
		return nil, nil, code, false
	}
	finish := func() {}
	if a.many() {
		var update func(cluster string, done, total int)
		if update, finish = progressLine(a.progress, errOut, what); update != nil {
			c.measure.Progress = func(done, total int) { update("", done, total) }
		}
	}
	return cfg, func() { finish(); c.printStats(cfg, errOut) }, ExitOK, true
}

// runFleet measures every release (run: one cluster's --all/-A) in the cluster of every
// context asked for, concurrently, and prints one summary with a CONTEXT column: a cluster that
// cannot be measured is a row saying why (exit 3), the others are reported all the same.
func (c *diffCommon) runFleet(ctx context.Context, a *allFlags, what string, run func(context.Context, *action.Configuration, action.Measure) (*action.Summary, error), name func(diff.SummaryRow) string, out, errOut io.Writer) int {
	contexts, err := c.kube.fleetContexts()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	update, finish := progressLine(a.progress, errOut, what)
	f := action.Fleet{Options: c.kube.options(), Contexts: contexts, Now: now}
	s, configs := f.Run(ctx, func(ctx context.Context, cfg *action.Configuration, progress func(done, total int)) (*action.Summary, error) {
		m := c.measure
		m.Progress = progress
		return run(ctx, cfg, m)
	}, update)
	finish()
	if c.stats {
		for i, cfg := range configs {
			if cfg != nil {
				fmt.Fprintf(errOut, "helm-drift diff: context %s: %s\n", contexts[i], cfg.Counts)
			}
		}
	}
	return c.writeSummary(s, nil, func(r diff.SummaryRow) string { return "context " + r.Context + ": " + name(r) }, out, errOut)
}
