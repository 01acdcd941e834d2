package helmcontroller

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
)

// addDependencies adds to a chart read from a directory of a source (a GitRepository's or a
// Bucket's files: sourceDir its root, chartPath the chart's directory in it) the dependencies
// that its Chart.lock (else its Chart.yaml) names and its charts/ directory lacks, as
// source-controller's dependency manager does before it packages such a chart: a local one
// (a file:// repository, or none: charts/NAME) from the same source, its version checked against
// the constraint; a remote one from its repository's URL (an HTTP index, or oci://), the
// constraint resolved there through the mirrors and the chart cache, as pullFromRepository
// reads it. An alias renames it. Without it, the render would leave the subchart out: Helm's SDK
// renders the dependencies it is given. A packaged chart (a .tgz at chartPath) is left as it is,
// as source-controller leaves it.
// xref: source-controller internal/helm/chart/dependency_manager.go Build, collectMissing,
// addLocalDependency, addRemoteDependency; builder_local.go Build (for a directory only).
func (o ChartOptions) addDependencies(ctx context.Context, ch *chartv2.Chart, sourceDir, chartPath string) error {
	if fi, err := os.Stat(filepath.Join(sourceDir, filepath.FromSlash(chartPath))); err != nil || !fi.IsDir() {
		return nil
	}
	reqs := ch.Metadata.Dependencies
	if ch.Lock != nil {
		reqs = ch.Lock.Dependencies
	}
	missing := collectMissing(ch.Dependencies(), reqs)
	names := make([]string, 0, len(missing))
	for name := range missing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		dep := missing[name]
		var sub *chartv2.Chart
		var err error
		if dep.Repository == "" || strings.HasPrefix(dep.Repository, "file://") {
			sub, err = localDependency(sourceDir, chartPath, dep)
		} else {
			sub, _, _, err = o.pullFromRepository(ctx, map[string]any{"url": strings.TrimSuffix(dep.Repository, "/")},
				"dependency repository "+dep.Repository, dep.Name, dep.Version)
		}
		if err != nil {
			return fmt.Errorf("chart %s: dependency %s: %w", ch.Name(), name, err)
		}
		if dep.Alias != "" {
			sub.Metadata.Name = dep.Alias
		}
		ch.AddDependency(sub)
	}
	return nil
}

// collectMissing are the dependencies of reqs the chart lacks, by alias or name.
// xref: source-controller internal/helm/chart/dependency_manager.go collectMissing.
func collectMissing(current []*chartv2.Chart, reqs []*chartv2.Dependency) map[string]*chartv2.Dependency {
	if len(current) == len(reqs) {
		return nil
	}
	missing := map[string]*chartv2.Dependency{}
	for _, dep := range reqs {
		name := dep.Name
		if dep.Alias != "" {
			name = dep.Alias
		}
		found := false
		for _, c := range current {
			found = found || c.Name() == name
		}
		if !found {
			missing[name] = dep
		}
	}
	return missing
}

// localDependency reads a local dependency from the source: its file:// path from the chart's
// directory (charts/NAME without a repository), never outside the source.
func localDependency(sourceDir, chartPath string, dep *chartv2.Dependency) (*chartv2.Chart, error) {
	rel := path.Join(chartPath, "charts", dep.Name)
	if dep.Repository != "" {
		u, err := url.Parse(dep.Repository)
		if err != nil {
			return nil, fmt.Errorf("repository %q: %w", dep.Repository, err)
		}
		rel = path.Join(chartPath, u.Host, u.Path)
	}
	dir := filepath.Join(sourceDir, filepath.FromSlash(path.Clean("/"+rel)))
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("no chart found at '%s' (reference '%s')", path.Clean("/"+rel), dep.Repository)
	}
	constraint, err := semver.NewConstraint(dep.Version)
	if err != nil {
		return nil, fmt.Errorf("invalid version/constraint format '%s': %w", dep.Version, err)
	}
	sub, err := loader4.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("chart at '%s': %w", path.Clean("/"+rel), err)
	}
	ver, err := semver.NewVersion(sub.Metadata.Version)
	if err != nil {
		return nil, err
	}
	if !constraint.Check(ver) {
		return nil, fmt.Errorf("can't get a valid version for constraint '%s'", dep.Version)
	}
	return sub, nil
}
