package helmcontroller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/helm-drift/helm-drift/internal/flux"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	registry4 "helm.sh/helm/v4/pkg/registry"
	repo4 "helm.sh/helm/v4/pkg/repo/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// pullOCIRepository pulls the chart an OCIRepository's spec points at (ref.digest, ref.tag,
// or the highest tag in ref.semver; insecure for plain HTTP), for a source without the
// artifact yet.
func (o ChartOptions) pullOCIRepository(obj map[string]any, src Source) (*chartv2.Chart, Source, error) {
	spec, _ := obj["spec"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	if str(spec, "url") == "" {
		return nil, src, fmt.Errorf("OCIRepository %s/%s has no spec.url", src.Namespace, src.Name)
	}
	insecure, _ := spec["insecure"].(bool)
	ref, _ := spec["ref"].(map[string]any)
	url, local := o.mirrored(str(spec, "url"))
	if local {
		want := str(ref, "semver")
		if want == "" {
			want = str(ref, "tag")
		}
		ch, err := loadLocal(url, chartName(str(spec, "url")), want)
		if err != nil {
			return nil, src, fmt.Errorf("OCIRepository %s/%s: %w", src.Namespace, src.Name, err)
		}
		src.Revision, src.From = ch.Metadata.Version, "mirror "+url
		return ch, src, nil
	}
	repo := strings.TrimPrefix(url, "oci://")
	ch, rev, err := o.pullOCI(repo, str(ref, "digest"), str(ref, "tag"), str(ref, "semver"), insecure || o.PlainHTTP)
	if err != nil {
		return nil, src, fmt.Errorf("OCIRepository %s/%s: %w", src.Namespace, src.Name, err)
	}
	src.Revision, src.From = rev, "registry"
	if err := withRevisionDigest(ch, rev); err != nil {
		return nil, src, fmt.Errorf("OCIRepository %s/%s: %w", src.Namespace, src.Name, err)
	}
	return ch, src, nil
}

// pullOCI pulls repo@digest, repo:tag, or the highest tag of repo matching constraint
// (latest without any), and returns the chart and its revision as source-controller writes
// it (<tag>@sha256:<manifest digest>).
func (o ChartOptions) pullOCI(repo, dig, tag, constraint string, plainHTTP bool) (*chartv2.Chart, string, error) {
	opts := []registry4.ClientOption{registry4.ClientOptWriter(io.Discard), registry4.ClientOptHTTPClient(o.HTTP)}
	if plainHTTP {
		opts = append(opts, registry4.ClientOptPlainHTTP())
	}
	client, err := registry4.NewClient(opts...)
	if err != nil {
		return nil, "", err
	}
	var target string
	switch {
	case dig != "":
		target = repo + "@" + dig
	case constraint != "":
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return nil, "", fmt.Errorf("ref.semver %q: %w", constraint, err)
		}
		tags, err := client.Tags(repo)
		if err != nil {
			cached, ok := o.Cache.read(".tags", "oci", repo)
			if !ok {
				return nil, "", fmt.Errorf("list the tags of oci://%s: %w", repo, err)
			}
			tags = strings.Split(string(cached), "\n")
		} else {
			o.Cache.write([]byte(strings.Join(tags, "\n")), ".tags", "oci", repo)
		}
		var best *semver.Version
		for _, t := range tags {
			if v, err := semver.NewVersion(t); err == nil && c.Check(v) && (best == nil || v.GreaterThan(best)) {
				best = v
			}
		}
		if best == nil {
			return nil, "", fmt.Errorf("no tag of oci://%s matches %s", repo, constraint)
		}
		tag = best.Original()
		target = repo + ":" + tag
	case tag != "":
		target = repo + ":" + tag
	default:
		tag = "latest"
		target = repo + ":latest"
	}
	data, dataOK := o.Cache.read(".tgz", "oci", target)
	revData, revOK := o.Cache.read(".rev", "oci", target)
	rev := string(revData)
	if !dataOK || !revOK {
		res, err := client.Pull(target, registry4.PullOptWithChart(true))
		if err != nil {
			return nil, "", fmt.Errorf("pull oci://%s: %w", target, err)
		}
		data, rev = res.Chart.Data, res.Manifest.Digest
		if tag != "" {
			rev = tag + "@" + rev
		}
		o.Cache.write(data, ".tgz", "oci", target)
		o.Cache.write([]byte(rev), ".rev", "oci", target)
	}
	ch, err := loader4.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("oci://%s: not a chart: %w", target, err)
	}
	return ch, rev, nil
}

// pullTemplate reads the chart spec.chart asks for from its HelmRepository (an HTTP index or
// an OCI repository) or from this repository, with its valuesFiles merged, as the HelmChart
// helm-controller makes would. helmChart is that HelmChart as it is (nil: not there, or not
// known): with valuesFiles its generation becomes the chart version's build metadata, and so
// the one it will have (1 when helm-controller creates it, one more when it changes it). With
// reconcileStrategy Revision, a chart of this repository's GitRepository carries the commit
// read (its first 12 hex digits) there too, before the generation (1.0.0+0123456789ab.1).
// xref: source-controller internal/controller/helmchart_controller.go buildFromTarballArtifact.
func (o ChartOptions) pullTemplate(ctx context.Context, hr *v2.HelmRelease, src Source, helmChart map[string]any) (*chartv2.Chart, Source, error) {
	ch, src, sourceDir, revision, err := o.pullTemplateChart(ctx, hr, src)
	if err != nil {
		return nil, src, err
	}
	generation := int64(1)
	if helmChart != nil {
		md, _ := helmChart["metadata"].(map[string]any)
		generation, _ = toInt64(md["generation"])
		if !sameChart(helmChart, hr.Spec.Chart) {
			generation++
		}
	}
	tpl := hr.Spec.Chart.Spec
	meta := ""
	if tpl.ReconcileStrategy == "Revision" {
		switch kind := tpl.SourceRef.Kind; {
		case kind == "GitRepository" && len(revision) >= 12:
			meta = revision[:12]
		case kind == "GitRepository" || kind == "Bucket":
			return nil, src, fmt.Errorf("spec.chart.spec.reconcileStrategy Revision: source-controller makes the %s's revision the chart version's build metadata, and it is not known here (preview Git revisions, not a directory)", kind)
		}
	}
	if err := applyValuesFiles(ch, tpl, sourceDir, meta, generation); err != nil {
		return nil, src, err
	}
	if meta != "" {
		src.Revision = ch.Metadata.Version
	}
	return ch, src, nil
}

// toInt64 reads a decoded JSON number.
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// pullTemplateChart reads the chart of pullTemplate, and the root of this repository's
// checkout when it came from there.
func (o ChartOptions) pullTemplateChart(ctx context.Context, hr *v2.HelmRelease, src Source) (ch *chartv2.Chart, _ Source, dir, revision string, err error) {
	tpl := hr.Spec.Chart.Spec
	ref := tpl.SourceRef
	ns := ref.Namespace
	if ns == "" {
		ns = hr.Namespace
	}
	if ref.Kind == "GitRepository" && o.GitRepository != nil {
		dir, revision, err = o.GitRepository(ns, ref.Name)
		if err != nil {
			return nil, src, "", "", fmt.Errorf("spec.chart.spec.sourceRef: %w; helm-drift reads charts of GitRepositories from this one", err)
		}
		ch, err = loader4.Load(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+tpl.Chart))))
		if err != nil {
			return nil, src, "", "", fmt.Errorf("GitRepository %s/%s: chart %s: %w", ns, ref.Name, tpl.Chart, err)
		}
		if err := o.addDependencies(ctx, ch, dir, path.Clean("/"+tpl.Chart)); err != nil {
			return nil, src, "", "", fmt.Errorf("GitRepository %s/%s: %w", ns, ref.Name, err)
		}
		src.Revision, src.From = ch.Metadata.Version, "this repository"
		return ch, src, dir, revision, nil
	}
	if ref.Kind == "Bucket" {
		ch, src, dir, err = o.bucketChart(ctx, tpl.Chart, ns, ref.Name, src)
		return ch, src, dir, "", err
	}
	ch, src, err = o.pullRepositoryChart(ctx, tpl, ns, src)
	return ch, src, "", "", err
}

// pullRepositoryChart reads the chart of pullTemplate from its HelmRepository ns/name (an HTTP
// index or an OCI repository).
func (o ChartOptions) pullRepositoryChart(ctx context.Context, tpl v2.HelmChartTemplateSpec, ns string, src Source) (*chartv2.Chart, Source, error) {
	ref := tpl.SourceRef
	if ref.Kind != "HelmRepository" {
		return nil, src, fmt.Errorf("spec.chart.spec.sourceRef kind %s: helm-drift reads spec.chart from a HelmRepository (the HelmChart %s/%s has no artifact for it yet)", ref.Kind, src.Namespace, src.Name)
	}
	repoObj, err := o.Get.Get(ctx, flux.SourceGroup, flux.SourceVersion, "HelmRepository", ns, ref.Name)
	if err != nil {
		return nil, src, fmt.Errorf("HelmRepository %s/%s (spec.chart.spec.sourceRef): %w", ns, ref.Name, err)
	}
	spec, _ := repoObj["spec"].(map[string]any)
	ch, rev, from, err := o.pullFromRepository(ctx, spec, fmt.Sprintf("HelmRepository %s/%s", ns, ref.Name), tpl.Chart, tpl.Version)
	if err != nil {
		return nil, src, err
	}
	src.Revision, src.From = rev, from
	return ch, src, nil
}

// pullFromRepository reads the chart name at version (a constraint; "" any) from the
// repository spec says (url, type, insecure), named what in errors: an HTTP index or an OCI
// repository, through the mirrors and the chart cache. It returns the chart, the version read
// and where it came from.
func (o ChartOptions) pullFromRepository(ctx context.Context, spec map[string]any, what, name, version string) (*chartv2.Chart, string, string, error) {
	base, _ := spec["url"].(string)
	base, local := o.mirrored(base)
	if version == "" {
		version = "*"
	}
	if local {
		ch, err := loadLocal(base, name, version)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", what, err)
		}
		return ch, ch.Metadata.Version, "mirror " + base, nil
	}
	if typ, _ := spec["type"].(string); typ != "oci" && !strings.HasPrefix(base, "oci://") && exactVersion(version) {
		if data, ok := o.Cache.read(".tgz", "http", base, name, strings.TrimPrefix(version, "=")); ok {
			if ch, err := loader4.LoadArchive(bytes.NewReader(data)); err == nil {
				return ch, ch.Metadata.Version, "repository (cached)", nil
			}
		}
	}
	if typ, _ := spec["type"].(string); typ == "oci" || strings.HasPrefix(base, "oci://") {
		insecure, _ := spec["insecure"].(bool)
		ch, rev, err := o.pullOCI(strings.TrimPrefix(base, "oci://")+"/"+name, "", "", version, insecure || o.PlainHTTP)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", what, err)
		}
		return ch, rev, "repository", nil
	}
	index, err := o.get(ctx, base+"/index.yaml")
	if err != nil {
		cached, ok := o.Cache.read(".index", "http", base)
		if !ok {
			return nil, "", "", fmt.Errorf("%s: %w", what, err)
		}
		index = cached
	} else {
		o.Cache.write(index, ".index", "http", base)
	}
	var idx repo4.IndexFile
	if err := sigsyaml.Unmarshal(index, &idx); err != nil {
		return nil, "", "", fmt.Errorf("%s: %s/index.yaml: %w", what, base, err)
	}
	idx.SortEntries()
	cv, err := idx.Get(name, version)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: chart %s %s: %w", what, name, version, err)
	}
	if len(cv.URLs) == 0 {
		return nil, "", "", fmt.Errorf("%s: chart %s %s has no URL", what, name, cv.Version)
	}
	cu, err := url.Parse(cv.URLs[0])
	if err != nil {
		return nil, "", "", err
	}
	if !cu.IsAbs() {
		b, _ := url.Parse(base + "/")
		cu = b.ResolveReference(cu)
	}
	data, ok := o.Cache.read(".tgz", "http", base, name, cv.Version)
	if !ok {
		if data, err = o.get(ctx, cu.String()); err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", what, err)
		}
		o.Cache.write(data, ".tgz", "http", base, name, cv.Version)
	}
	ch, err := loader4.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: %s: not a chart: %w", what, cu, err)
	}
	return ch, cv.Version, "repository", nil
}

// bucketChart reads the chart at chartPath of the Bucket ns/name from a local copy of the bucket
// that --chart-source maps its URL to (https://ENDPOINT/BUCKET, http:// when spec.insecure): an
// S3-compatible store is not read from here. As for a GitRepository, the chart is the directory
// (or packaged chart) at that path of the bucket's content, its version what its Chart.yaml
// says, and valuesFiles are read from the same copy.
func (o ChartOptions) bucketChart(ctx context.Context, chartPath, ns, name string, src Source) (*chartv2.Chart, Source, string, error) {
	obj, err := o.Get.Get(ctx, flux.SourceGroup, flux.SourceVersion, "Bucket", ns, name)
	if err != nil {
		return nil, src, "", fmt.Errorf("Bucket %s/%s (spec.chart.spec.sourceRef): %w", ns, name, err)
	}
	url := bucketURL(obj)
	dir, local := o.mirrored(url)
	if !local {
		return nil, src, "", fmt.Errorf("Bucket %s/%s (%s): a chart from a Bucket is read from its HelmChart's artifact once source-controller made it, else from a local copy of the bucket (diff tree: --chart-source %s=DIR)", ns, name, url, url)
	}
	ch, err := loader4.Load(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+chartPath))))
	if err != nil {
		return nil, src, "", fmt.Errorf("Bucket %s/%s (a copy in %s): chart %s: %w", ns, name, dir, chartPath, err)
	}
	if err := o.addDependencies(ctx, ch, dir, path.Clean("/"+chartPath)); err != nil {
		return nil, src, "", fmt.Errorf("Bucket %s/%s: %w", ns, name, err)
	}
	src.Revision, src.From = ch.Metadata.Version, "mirror "+dir
	return ch, src, dir, nil
}

// bucketURL is the URL a Bucket is known by to --chart-source: https://ENDPOINT/BUCKET
// (http:// when spec.insecure; an endpoint written with its scheme keeps it).
func bucketURL(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	endpoint, _ := spec["endpoint"].(string)
	bucket, _ := spec["bucketName"].(string)
	insecure, _ := spec["insecure"].(bool)
	endpoint = strings.TrimSuffix(endpoint, "/")
	if !strings.Contains(endpoint, "://") {
		scheme := "https://"
		if insecure {
			scheme = "http://"
		}
		endpoint = scheme + endpoint
	}
	return endpoint + "/" + bucket
}
