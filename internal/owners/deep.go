package owners

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Getter reads one object from the cluster as unstructured content. *live.Client implements
// it.
type Getter interface {
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
}

// DeepOptions configure the deep check.
type DeepOptions struct {
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

// Deep renders the chart of every HelmRelease in the stream the way helm-controller would
// (its source, its values and valuesFrom resolved from the stream or the cluster) and finds
// objects rendered by two releases, or by a release and the stream itself. Values, Secret
// ones included, are only ever handed to the chart: no finding or error quotes them.
func (c *Checker) Deep(ctx context.Context, objs []Object, o DeepOptions) ([]Finding, error) {
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	d := &deep{c: c, opts: o, index: map[string]Object{}}
	type owned struct {
		owner string
		where string
	}
	owners := map[Identity][]owned{}
	var order []Identity
	add := func(id Identity, owner, where string) {
		for _, ow := range owners[id] {
			if ow.owner == owner {
				return // one release rendering an object twice is the stream check's business
			}
		}
		if _, ok := owners[id]; !ok {
			order = append(order, id)
		}
		owners[id] = append(owners[id], owned{owner, where})
	}
	this := "this stream"
	if c.opts.Release != "" {
		this = "release " + c.opts.Namespace + "/" + c.opts.Release + " (this stream)"
	}
	for _, ob := range objs {
		d.remember(ob)
		if !ob.Hook && ob.Name != "" {
			add(c.Identity(ob), this, ob.Where())
		}
	}
	for _, ob := range objs {
		if ob.Kind != "HelmRelease" || ob.Group() != "helm.toolkit.fluxcd.io" || ob.Node == nil {
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
		robjs, err := Objects(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: its chart rendered a stream that cannot be read: %v", ErrCouldNotCheck, name, err)
		}
		sub := NewChecker(robjs, Options{Namespace: relNS, Scopes: c.opts.Scopes})
		for _, r := range robjs {
			if !r.Hook && r.Name != "" {
				add(sub.Identity(r), name, "its chart's "+r.Doc.Name())
			}
		}
		c.Notes = append(c.Notes, sub.Notes...)
	}
	var findings []Finding
	for _, id := range order {
		ow := owners[id]
		if len(ow) < 2 {
			continue
		}
		f := Finding{ID: IDDeep, Severity: c.opts.Severity, Object: id.String()}
		var parts []string
		for _, x := range ow {
			f.Owners = append(f.Owners, Owner{Kind: ownerKind(x.owner), Name: x.owner})
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
	c     *Checker
	opts  DeepOptions
	index map[string]Object // "Kind/namespace/name" of sources, ConfigMaps, Secrets in the stream
}

func (d *deep) remember(o Object) {
	switch o.Kind {
	case "OCIRepository", "HelmRepository", "ConfigMap", "Secret":
		d.index[o.Kind+"/"+d.c.Identity(o).Namespace+"/"+o.Name] = o
	}
}

// object finds kind namespace/name in the stream, else in the cluster.
func (d *deep) object(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	if o, ok := d.index[kind+"/"+namespace+"/"+name]; ok {
		m, err := o.Decode()
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s in the stream: %w", kind, namespace, name, err)
		}
		return m, nil
	}
	if d.opts.Cluster == nil {
		return nil, fmt.Errorf("%s %s/%s is neither in the stream nor, without --cluster, looked up in the cluster", kind, namespace, name)
	}
	m, err := d.opts.Cluster.Get(ctx, group, version, kind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, err)
	}
	return m, nil
}

// render renders a HelmRelease's chart and returns the manifests and the release namespace.
func (d *deep) render(ctx context.Context, o Object, hrNS string) ([]byte, string, error) {
	hr, err := o.Decode()
	if err != nil {
		return nil, "", err
	}
	spec, _ := hr["spec"].(map[string]any)
	target := ReleaseOf(o.Node, hrNS)
	relNS := str(spec, "targetNamespace")
	if relNS == "" {
		relNS = hrNS
	}
	ch, err := d.chart(ctx, o, spec, hrNS)
	if err != nil {
		return nil, "", err
	}
	vals, err := d.values(ctx, spec, hrNS)
	if err != nil {
		return nil, "", err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = target.Release, relNS
	install.IncludeCRDs = true
	install.DisableHooks = false
	rel, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, "", fmt.Errorf("render chart %s: %w", ch.Name(), redactErr(err))
	}
	var out bytes.Buffer
	for _, crd := range ch.CRDObjects() {
		fmt.Fprintf(&out, "---\n%s\n", crd.File.Data)
	}
	out.WriteString(rel.Manifest)
	return out.Bytes(), relNS, nil
}

// redactErr keeps a template error's location and drops what follows it, where a value (a
// Secret's, perhaps) might be quoted.
func redactErr(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "error calling"); i > 0 {
		msg = msg[:i] + "error calling a template function (details withheld: they may quote values)"
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return errors.New(msg)
}

// chart finds the HelmRelease's chart: a --chart-dir, its chartRef OCIRepository, or its
// spec.chart HelmRepository.
func (d *deep) chart(ctx context.Context, o Object, spec map[string]any, hrNS string) (*chart.Chart, error) {
	chartSpec, _ := nested(spec, "chart", "spec").(map[string]any)
	chartName := str(chartSpec, "chart")
	for _, key := range []string{hrNS + "/" + o.Name, o.Name, chartName} {
		if dir, ok := d.opts.ChartDirs[key]; ok && key != "" {
			ch, err := loader.Load(dir)
			if err != nil {
				return nil, fmt.Errorf("--chart-dir %s=%s: %w", key, dir, err)
			}
			return ch, nil
		}
	}
	if ref, ok := spec["chartRef"].(map[string]any); ok {
		kind, name, ns := str(ref, "kind"), str(ref, "name"), str(ref, "namespace")
		if ns == "" {
			ns = hrNS
		}
		if kind != "OCIRepository" {
			return nil, fmt.Errorf("chartRef kind %s is not supported by --deep; give the chart with --chart-dir %s/%s=PATH", kind, hrNS, o.Name)
		}
		src, err := d.object(ctx, "source.toolkit.fluxcd.io", "v1", "OCIRepository", ns, name)
		if err != nil {
			return nil, err
		}
		return d.pullOCI(ctx, src)
	}
	if chartSpec == nil {
		return nil, errors.New("no spec.chartRef and no spec.chart: no chart to render")
	}
	src, _ := chartSpec["sourceRef"].(map[string]any)
	kind, name, ns := str(src, "kind"), str(src, "name"), str(src, "namespace")
	if ns == "" {
		ns = hrNS
	}
	if kind != "HelmRepository" {
		return nil, fmt.Errorf("spec.chart.spec.sourceRef kind %s is not supported by --deep; give the chart with --chart-dir %s/%s=PATH", kind, hrNS, o.Name)
	}
	repoObj, err := d.object(ctx, "source.toolkit.fluxcd.io", "v1", "HelmRepository", ns, name)
	if err != nil {
		return nil, err
	}
	return d.pullHelmRepository(ctx, repoObj, chartName, str(chartSpec, "version"))
}

// pullOCI pulls the chart an OCIRepository points at: its ref's digest, tag, or the highest
// tag in its semver range.
func (d *deep) pullOCI(ctx context.Context, src map[string]any) (*chart.Chart, error) {
	spec, _ := src["spec"].(map[string]any)
	u := strings.TrimPrefix(str(spec, "url"), "oci://")
	if u == "" {
		return nil, errors.New("OCIRepository has no spec.url")
	}
	client, err := d.registryClient(spec)
	if err != nil {
		return nil, err
	}
	ref, _ := spec["ref"].(map[string]any)
	var target string
	switch {
	case str(ref, "digest") != "":
		target = u + "@" + str(ref, "digest")
	case str(ref, "semver") != "":
		constraint, err := semver.NewConstraint(str(ref, "semver"))
		if err != nil {
			return nil, fmt.Errorf("OCIRepository ref.semver %q: %w", str(ref, "semver"), err)
		}
		tags, err := client.Tags(u)
		if err != nil {
			return nil, fmt.Errorf("list tags of oci://%s: %w", u, err)
		}
		var best *semver.Version
		for _, t := range tags {
			if v, err := semver.NewVersion(t); err == nil && constraint.Check(v) && (best == nil || v.GreaterThan(best)) {
				best = v
			}
		}
		if best == nil {
			return nil, fmt.Errorf("no tag of oci://%s matches %s", u, str(ref, "semver"))
		}
		target = u + ":" + best.Original()
	case str(ref, "tag") != "":
		target = u + ":" + str(ref, "tag")
	default:
		target = u + ":latest"
	}
	res, err := client.Pull(target, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("pull oci://%s: %w", target, err)
	}
	return loader.LoadArchive(bytes.NewReader(res.Chart.Data))
}

func (d *deep) registryClient(spec map[string]any) (*registry.Client, error) {
	opts := []registry.ClientOption{registry.ClientOptWriter(io.Discard)}
	if insecure, _ := spec["insecure"].(bool); insecure {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	return registry.NewClient(opts...)
}

// pullHelmRepository downloads a chart version from an HTTP Helm repository (or an OCI one).
func (d *deep) pullHelmRepository(ctx context.Context, repoObj map[string]any, name, version string) (*chart.Chart, error) {
	spec, _ := repoObj["spec"].(map[string]any)
	base := strings.TrimSuffix(str(spec, "url"), "/")
	if str(spec, "type") == "oci" || strings.HasPrefix(base, "oci://") {
		ref := map[string]any{"semver": version}
		if version == "" {
			ref = map[string]any{"tag": "latest"}
		}
		return d.pullOCI(ctx, map[string]any{"spec": map[string]any{"url": base + "/" + name, "insecure": spec["insecure"], "ref": ref}})
	}
	index, err := d.fetch(ctx, base+"/index.yaml")
	if err != nil {
		return nil, err
	}
	var idx repo.IndexFile
	if err := sigsyaml.Unmarshal(index, &idx); err != nil {
		return nil, fmt.Errorf("%s/index.yaml: %w", base, err)
	}
	idx.SortEntries()
	if version == "" {
		version = "*"
	}
	cv, err := idx.Get(name, version)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s in %s: %w", name, version, base, err)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s %s in %s has no URL", name, cv.Version, base)
	}
	chartURL, err := url.Parse(cv.URLs[0])
	if err != nil {
		return nil, err
	}
	if !chartURL.IsAbs() {
		b, _ := url.Parse(base + "/")
		chartURL = b.ResolveReference(chartURL)
	}
	data, err := d.fetch(ctx, chartURL.String())
	if err != nil {
		return nil, err
	}
	return loader.LoadArchive(bytes.NewReader(data))
}

func (d *deep) fetch(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// values merges the HelmRelease's valuesFrom (in order) and then its spec.values, the way
// helm-controller does.
func (d *deep) values(ctx context.Context, spec map[string]any, ns string) (map[string]any, error) {
	result := map[string]any{}
	refs, _ := spec["valuesFrom"].([]any)
	for i, r := range refs {
		ref, _ := r.(map[string]any)
		kind, name := str(ref, "kind"), str(ref, "name")
		key := str(ref, "valuesKey")
		if key == "" {
			key = "values.yaml"
		}
		optional, _ := ref["optional"].(bool)
		if kind != "ConfigMap" && kind != "Secret" {
			return nil, fmt.Errorf("valuesFrom[%d]: kind %q (want ConfigMap or Secret)", i, kind)
		}
		obj, err := d.object(ctx, "", "v1", kind, ns, name)
		if err != nil {
			if optional {
				continue
			}
			return nil, fmt.Errorf("valuesFrom[%d]: %w", i, err)
		}
		value, found, err := dataValue(obj, key)
		if err != nil {
			return nil, fmt.Errorf("valuesFrom[%d] %s %s/%s key %s: %w", i, kind, ns, name, key, err)
		}
		if !found {
			if optional {
				continue
			}
			return nil, fmt.Errorf("valuesFrom[%d]: %s %s/%s has no key %s", i, kind, ns, name, key)
		}
		if path := str(ref, "targetPath"); path != "" {
			if err := strvals.ParseIntoString(path+"="+value, result); err != nil {
				return nil, fmt.Errorf("valuesFrom[%d] targetPath %s: cannot set it (value withheld)", i, path)
			}
			continue
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal([]byte(value), &m); err != nil {
			return nil, fmt.Errorf("valuesFrom[%d] %s %s/%s key %s: not a YAML mapping (content withheld)", i, kind, ns, name, key)
		}
		result = mergeMaps(result, m)
	}
	if inline, ok := spec["values"].(map[string]any); ok {
		result = mergeMaps(result, inline)
	}
	return result, nil
}

// dataValue reads key from a ConfigMap's data or a Secret's data (base64) or stringData.
func dataValue(obj map[string]any, key string) (string, bool, error) {
	if sd, ok := obj["stringData"].(map[string]any); ok {
		if v, ok := sd[key].(string); ok {
			return v, true, nil
		}
	}
	data, _ := obj["data"].(map[string]any)
	v, ok := data[key].(string)
	if !ok {
		return "", false, nil
	}
	if obj["kind"] == "Secret" {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", true, errors.New("not base64 (content withheld)")
		}
		return string(b), true, nil
	}
	return v, true, nil
}

// mergeMaps merges b into a, recursively; b wins.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bv, ok := v.(map[string]any); ok {
			if av, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(av, bv)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func nested(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
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
