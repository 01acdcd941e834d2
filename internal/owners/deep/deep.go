// Package deep is owners --deep: it renders the chart of every HelmRelease in a stream the way
// helm-controller would and finds objects two releases render. It is apart from package owners
// so that the stream and cluster checks do not compile Helm's SDK.
package deep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
)

// Getter reads one object from the cluster as unstructured content. *live.Client implements
// it.
type Getter interface {
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
}

// Options configure the deep check.
type Options struct {
	// ChartDirs maps a HelmRelease (namespace/name or name) or a chart name to a local chart
	// directory or archive, used instead of its source.
	ChartDirs map[string]string
	// Cluster, when set, is asked for what the stream does not hold: sources, valuesFrom.
	Cluster Getter
	// Timeout bounds each chart download (default 60 s).
	Timeout time.Duration
}

// ErrCouldNotCheck wraps every failure to find or render a chart: the deep check could not
// look, which is never reported as clean.
var ErrCouldNotCheck = errors.New("could not check")

// Check renders the chart of every HelmRelease in the stream c checks the way helm-controller
// would (its source, its values and valuesFrom resolved from the stream or the cluster) and
// finds objects rendered by two releases, or by a release and the stream itself. Values, Secret
// ones included, are only ever handed to the chart: no finding or error quotes them. Notes of
// the rendered streams are added to c's.
func Check(ctx context.Context, c *owners.Checker, objs []manifest.Object, o Options) ([]owners.Finding, error) {
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	d := &deep{c: c, opts: o, stream: &helmcontroller.StreamFirst{NoCluster: "is neither in the stream nor, without --cluster, looked up in the cluster"}}
	if o.Cluster != nil {
		d.stream.Cluster = wrapped{o.Cluster}
	}
	type owned struct {
		owner string
		where string
	}
	byID := map[manifest.Identity][]owned{}
	var order []manifest.Identity
	add := func(id manifest.Identity, owner, where string) {
		for _, ow := range byID[id] {
			if ow.owner == owner {
				return // one release rendering an object twice is the stream check's business
			}
		}
		if _, ok := byID[id]; !ok {
			order = append(order, id)
		}
		byID[id] = append(byID[id], owned{owner, where})
	}
	copts := c.Options()
	this := "this stream"
	if copts.Release != "" {
		this = "release " + copts.Namespace + "/" + copts.Release + " (this stream)"
	}
	for _, ob := range objs {
		d.remember(ob)
		if !ob.Hook && ob.Name != "" {
			add(c.Identity(ob), this, ob.Where())
		}
	}
	for _, ob := range objs {
		if ob.Kind != flux.HelmReleaseKind || ob.Group() != flux.HelmReleaseGroup {
			continue
		}
		hrNS := c.Identity(ob).Namespace
		name := fmt.Sprintf("HelmRelease %s/%s", hrNS, ob.Name)
		rendered, relNS, err := d.render(ctx, ob, hrNS)
		if err != nil {
			return nil, fmt.Errorf("%w: %s (%s): %v", ErrCouldNotCheck, name, ob.Where(), err)
		}
		s, err := manifest.Split(rendered)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: its chart rendered a stream that cannot be read: %v", ErrCouldNotCheck, name, err)
		}
		robjs, err := manifest.Objects(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: its chart rendered a stream that cannot be read: %v", ErrCouldNotCheck, name, err)
		}
		sub := owners.NewChecker(robjs, owners.Options{Namespace: relNS, Scopes: copts.Scopes})
		for _, r := range robjs {
			if !r.Hook && r.Name != "" {
				add(sub.Identity(r), name, "its chart's "+r.Doc.Name())
			}
		}
		c.Notes = append(c.Notes, sub.Notes...)
	}
	var findings []owners.Finding
	for _, id := range order {
		ow := byID[id]
		if len(ow) < 2 {
			continue
		}
		f := owners.Finding{ID: owners.IDDeep, Severity: copts.Severity, Object: id.String()}
		var parts []string
		for _, x := range ow {
			f.Owners = append(f.Owners, owners.Owner{Kind: ownerKind(x.owner), Name: x.owner})
			parts = append(parts, x.owner+" ("+x.where+")")
		}
		f.Message = fmt.Sprintf("%s is rendered by %s: whichever installs second fails (\"cannot be imported into the current release\"), or one release deletes what the other needs on its next upgrade. Render it in one chart only, or turn it off in the other chart's values.",
			id, strings.Join(parts, " and "))
		findings = append(findings, f)
	}
	return findings, nil
}

func ownerKind(owner string) string {
	if strings.HasPrefix(owner, "HelmRelease ") {
		return "helmrelease"
	}
	return "release"
}

// deep holds what one deep check has found in the stream.
type deep struct {
	c    *owners.Checker
	opts Options
	// stream holds the sources, ConfigMaps and Secrets of the stream, asked before the cluster.
	stream *helmcontroller.StreamFirst
}

// wrapped names the object a cluster error is about.
type wrapped struct{ Getter }

// Get implements helmcontroller.Getter.
func (w wrapped) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	m, err := w.Getter.Get(ctx, group, version, kind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, err)
	}
	return m, nil
}

func (d *deep) remember(o manifest.Object) {
	switch o.Kind {
	case "OCIRepository", "HelmRepository", "ConfigMap", "Secret":
		d.stream.Add(o.Group(), o.Kind, d.c.Identity(o).Namespace, o.Name, o.Decode)
	}
}

// render renders a HelmRelease's chart as helm-controller would, with no cluster (lookup
// answers nothing; helmcontroller.Build, as diff helmrelease and diff tree render), and returns
// the manifests, the chart's crds/ first, and the release namespace.
func (d *deep) render(ctx context.Context, o manifest.Object, hrNS string) ([]byte, string, error) {
	obj, err := o.Decode()
	if err != nil {
		return nil, "", err
	}
	md, _ := obj["metadata"].(map[string]any)
	if md != nil && md["namespace"] == nil {
		md["namespace"] = hrNS
	}
	hr, err := helmcontroller.Decode(obj)
	if err != nil {
		return nil, "", err
	}
	ch, err := d.chartDir(o, hr)
	if err != nil {
		return nil, "", err
	}
	// Read from the source's own spec (the registry or repository): a HelmRelease of a stream
	// has no artifact yet.
	b, err := helmcontroller.Build(ctx, hr, helmcontroller.BuildOptions{Get: d.stream, Chart: ch,
		Charts: helmcontroller.ChartOptions{FromSpec: true, Timeout: d.opts.Timeout}})
	var be *helmcontroller.BuildError
	switch {
	case errors.As(err, &be) && be.Stage == helmcontroller.StageChart:
		return nil, "", fmt.Errorf("%w (or give the chart with --chart-dir %s/%s=PATH)", err, hr.Namespace, o.Name)
	case err != nil:
		return nil, "", err
	}
	var out bytes.Buffer
	for _, crd := range b.Chart.CRDObjects() {
		fmt.Fprintf(&out, "---\n%s\n", crd.File.Data)
	}
	out.WriteString(b.Manifest)
	return out.Bytes(), b.Namespace, nil
}

// chartDir is the HelmRelease's chart given with --chart-dir (by namespace/name, name or chart
// name), nil when none is.
func (d *deep) chartDir(o manifest.Object, hr *v2.HelmRelease) (*chartv2.Chart, error) {
	var chartName string
	if hr.Spec.Chart != nil {
		chartName = hr.Spec.Chart.Spec.Chart
	}
	for _, key := range []string{hr.Namespace + "/" + o.Name, o.Name, chartName} {
		if dir, ok := d.opts.ChartDirs[key]; ok && key != "" {
			ch, err := loader4.Load(dir)
			if err != nil {
				return nil, fmt.Errorf("--chart-dir %s=%s: %w", key, dir, err)
			}
			return ch, nil
		}
	}
	return nil, nil
}

// ParseChartDirs parses --chart-dir NAME=PATH values.
func ParseChartDirs(values []string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range values {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--chart-dir %q: want NAME=PATH (NAME: namespace/name or name of a HelmRelease, or a chart name)", v)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--chart-dir %s: %w", v, err)
		}
		abs, _ := filepath.Abs(path)
		dirs[name] = abs
	}
	return dirs, nil
}
