package action

import (
	"context"
	"fmt"
	"time"

	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
	"github.com/helm-drift/helm-drift/internal/owners/deep"
)

// Owners is the second-owner check of a stream: always within the stream, and as asked against
// the live cluster (Cluster) and the charts of the stream's HelmReleases (Deep).
type Owners struct {
	// Options are the checker's: the release, its namespace, the severity.
	Options owners.Options
	// Cluster also checks the live objects of Kube's cluster.
	Cluster bool
	Kube    *Connection
	// Deep renders each HelmRelease's chart; ChartDirs maps a HelmRelease or chart to a local
	// chart (NAME=DIR).
	Deep      bool
	ChartDirs []string
}

// Run runs the checks. An error means a check could not look (an unreachable cluster, a chart
// not found): never clean.
func (o *Owners) Run(objs []manifest.Object) (*owners.Checker, []owners.Finding, error) {
	timeout := o.Kube.timeout()
	var cl *live.Client
	if o.Cluster {
		ctx, cancel := context.WithTimeout(context.Background(), 5*timeout)
		defer cancel()
		cfg, err := o.Kube.Configuration()
		if err == nil {
			cl, err = cfg.Live(ctx)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("could not check the cluster: %w (fix the kubeconfig, or drop --cluster)", err)
		}
		o.Options.Scopes = owners.ClusterScopes(cl)
	}
	c := owners.NewChecker(objs, o.Options)
	findings, err := c.Stream(objs)
	if err != nil {
		return nil, nil, err
	}
	if cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*timeout)
		defer cancel()
		found, err := c.Cluster(ctx, objs, cl)
		if err != nil {
			return nil, nil, fmt.Errorf("could not check the cluster %s: %w", cl.Server, err)
		}
		findings = append(findings, found...)
	}
	if o.Deep {
		found, err := o.deep(c, objs, cl)
		if err != nil {
			return nil, nil, fmt.Errorf("--deep: %w", err)
		}
		findings = append(findings, found...)
	}
	return c, findings, nil
}

// deep runs the deep check; cl (may be nil) is asked for what the stream does not hold.
func (o *Owners) deep(c *owners.Checker, objs []manifest.Object, cl *live.Client) ([]owners.Finding, error) {
	dirs, err := deep.ParseChartDirs(o.ChartDirs)
	if err != nil {
		return nil, err
	}
	opts := deep.Options{ChartDirs: dirs}
	if cl != nil {
		opts.Cluster = cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return deep.Check(ctx, c, objs, opts)
}
