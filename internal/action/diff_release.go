package action

import (
	"context"
	"fmt"
	"sort"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// DiffRelease compares the manifest Helm stored for a release's latest revision with the
// cluster (what helm-controller's drift detection compares).
type DiffRelease struct {
	Config *Configuration
	Measure
	// Namespace is the release's namespace.
	Namespace string
}

// Run measures release name.
func (d *DiffRelease) Run(ctx context.Context, name string) (*diff.Report, error) {
	cfg, err := d.Config.Helm3(d.Namespace)
	if err != nil {
		return nil, err
	}
	rel, err := helmaction.NewGet(cfg).Run(name)
	if err != nil {
		return nil, ReleaseError(d.Namespace, name, err)
	}
	cl, err := d.Config.Live(ctx)
	if err != nil {
		return nil, err
	}
	return d.measure(ctx, cl, rel)
}

func (d *DiffRelease) measure(ctx context.Context, cl diff.Cluster, rel *release.Release) (*diff.Report, error) {
	return diff.Run(ctx, cl, d.input(diff.Input{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version,
		Desired: rel.Manifest, Previous: rel.Manifest}))
}

// RunAll measures every deployed, failed or pending release of the namespace (every namespace
// with allNamespaces), one summary row each, sorted by namespace and name.
func (d *DiffRelease) RunAll(ctx context.Context, allNamespaces bool) (*Summary, error) {
	ns := d.Namespace
	if allNamespaces {
		ns = ""
	}
	cfg, err := d.Config.Helm3(ns)
	if err != nil {
		return nil, err
	}
	list := helmaction.NewList(cfg)
	list.AllNamespaces = allNamespaces
	list.StateMask = helmaction.ListDeployed | helmaction.ListFailed | helmaction.ListPendingInstall | helmaction.ListPendingUpgrade | helmaction.ListPendingRollback
	rels, err := list.Run()
	if err != nil {
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	// The summary's order, from the start: Measure.Each is given the rows in it.
	sort.Slice(rels, func(i, j int) bool { return rels[i].Namespace+"/"+rels[i].Name < rels[j].Namespace+"/"+rels[j].Name })
	// One read of the cluster for the run: each kind's LIST in each namespace once, whatever
	// the number of releases there.
	snap, err := d.Config.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	s := summaries(len(rels), d.Measure, func(i int) (*diff.Report, diff.SummaryRow, string, error) {
		rel := rels[i]
		rep, err := d.measure(ctx, snap, rel)
		return rep, diff.SummaryRow{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version}, rel.Namespace + "/" + rel.Name, err
	})
	return s, nil
}
