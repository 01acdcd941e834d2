package helmcontroller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/memo"
	"github.com/opencontainers/go-digest"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Source says where a HelmRelease's chart came from.
type Source struct {
	// Kind, Namespace and Name name the source object (OCIRepository or HelmChart).
	Kind, Namespace, Name string
	// Revision is the source revision rendered (the artifact's, or the tag or version pulled).
	Revision string
	// From says how the chart was read: "artifact" (status.artifact.url, verified against its
	// digest), "artifact through the API server's service proxy", "registry" or "repository"
	// (the source's own spec, for a source without that artifact yet).
	From string
}

// String reads "OCIRepository apps/web 1.2.0@sha256:... (artifact)".
func (s Source) String() string {
	return fmt.Sprintf("%s %s/%s %s (%s)", s.Kind, s.Namespace, s.Name, s.Revision, s.From)
}

// ChartOptions say how to read charts.
type ChartOptions struct {
	// Get reads the source objects.
	Get Getter
	// HTTP fetches artifacts (default: a client with Timeout).
	HTTP *http.Client
	// Proxy, when set, fetches an artifact through the API server's service proxy:
	// service svc:port in namespace ns, path. It is tried when the artifact URL names an
	// in-cluster service this machine cannot reach.
	Proxy func(ctx context.Context, ns, svc, port, path string) ([]byte, error)
	// FromSpec reads the chart from the source's own spec (the registry or repository) rather
	// than its artifact: for a HelmRelease as written in a file, whose source has not produced
	// its artifact yet.
	FromSpec bool
	// PlainHTTP: speak plain HTTP to OCI registries the source does not mark insecure.
	PlainHTTP bool
	// Timeout bounds each download (default 60 s).
	Timeout time.Duration
	// Artifacts, when set, keeps the artifacts fetched, so that the HelmReleases of a run that
	// share an artifact fetch it once.
	Artifacts *Artifacts
	// Mirrors map a source's URL to another registry, repository or a local directory (with
	// FromSpec: diff tree's --chart-source).
	Mirrors []Mirror
	// Cache keeps the charts read from a spec on disk between runs (nil: none).
	Cache *ChartCache
	// GitRepository, when set, gives the directory of a GitRepository that is the repository
	// read (diff tree), and its commit ("" when unknown): a spec.chart from it is read from
	// there. An error says why it cannot be (another repository, another revision of this one).
	GitRepository func(namespace, name string) (dir, revision string, err error)
}

// Artifacts are the source artifacts fetched during one run, by digest: many HelmReleases of
// one source (or of sources in many namespaces that produced the same artifact) fetch and
// verify it once. Each HelmRelease still loads its own chart from the bytes (the Helm SDK
// changes the chart it renders). An artifact without a digest is fetched each time. The zero
// value is ready.
type Artifacts struct {
	byDigest memo.Map[string, fetched]
}

// errDigest: an artifact's bytes do not match the digest its source advertises.
var errDigest = errors.New("the artifact does not match its digest")

// fetched is one artifact's bytes and how they were read (Source.From).
type fetched struct {
	data []byte
	from string
}

// fetch returns the artifact of digest, fetched (by get) the first time it is asked for.
func (a *Artifacts) fetch(digest string, get func() ([]byte, string, error)) ([]byte, string, error) {
	if a == nil || digest == "" {
		return get()
	}
	f, err := a.byDigest.Get(digest, func() (fetched, error) {
		data, from, err := get()
		return fetched{data, from}, err
	})
	return f.data, f.from, err
}

// LoadChart reads a HelmRelease's chart the way helm-controller does: the artifact of its
// source (spec.chartRef's OCIRepository or HelmChart, or the HelmChart helm-controller makes
// for spec.chart, named <namespace>-<name>), verified against the artifact's digest, with the
// chart version of an OCIRepository's chart rewritten to <version>+<first 12 hex digits of
// the revision's digest>. With FromSpec, for a spec.chart whose HelmChart does not exist or
// asks for another chart, or when the artifact can be fetched neither from its URL nor through
// the service proxy, it reads the chart from the registry or repository instead (Source.From
// says so).
// xref: helm-controller internal/controller/helmrelease_controller.go reconcileRelease,
// getSource, mutateChartWithSourceRevision; internal/reconcile/helmchart_template.go;
// internal/loader/artifact_url.go SecureLoadChartFromURL.
func LoadChart(ctx context.Context, hr *v2.HelmRelease, o ChartOptions) (*chartv2.Chart, Source, error) {
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: o.Timeout}
	}
	switch {
	case hr.HasChartRef() && !hr.HasChartTemplate():
		ref := hr.Spec.ChartRef
		ns := ref.Namespace
		if ns == "" {
			ns = hr.Namespace
		}
		src := Source{Kind: ref.Kind, Namespace: ns, Name: ref.Name}
		switch ref.Kind {
		case "OCIRepository", "HelmChart":
		default:
			return nil, src, fmt.Errorf("spec.chartRef kind %s: helm-drift renders charts from an OCIRepository or a HelmChart", ref.Kind)
		}
		obj, err := o.Get.Get(ctx, flux.SourceGroup, flux.SourceVersion, ref.Kind, ns, ref.Name)
		if err != nil {
			return nil, src, fmt.Errorf("%s %s/%s (spec.chartRef): %w", ref.Kind, ns, ref.Name, err)
		}
		if ref.Kind == "OCIRepository" && (o.FromSpec || artifactOf(obj).URL == "") {
			return o.pullOCIRepository(obj, src)
		}
		if ref.Kind == "HelmChart" && o.FromSpec && artifactOf(obj).URL == "" {
			return o.pullHelmChartSpec(ctx, hr, obj, ns, ref.Name, src)
		}
		ch, got, err := o.fromArtifact(ctx, obj, src, ref.Kind == "OCIRepository")
		if errors.As(err, new(unreachable)) && ref.Kind == "OCIRepository" {
			// Neither the artifact's URL nor the service proxy answered: the source itself.
			ch, got, perr := o.pullOCIRepository(obj, src)
			got.From += " (the artifact is unreachable: " + err.Error() + ")"
			if perr != nil {
				return nil, got, fmt.Errorf("%v; and from the registry: %w", err, perr)
			}
			return ch, got, nil
		}
		return ch, got, err
	case hr.HasChartTemplate() && !hr.HasChartRef():
		tpl := hr.Spec.Chart
		src := Source{Kind: "HelmChart", Namespace: tpl.GetNamespace(hr.Namespace), Name: hr.GetHelmChartName()}
		obj, err := o.Get.Get(ctx, flux.SourceGroup, flux.SourceVersion, "HelmChart", src.Namespace, src.Name)
		switch {
		case apierrors.IsNotFound(err):
			return o.pullTemplate(ctx, hr, src, nil)
		case err != nil:
			return nil, src, fmt.Errorf("HelmChart %s/%s (made by helm-controller for spec.chart): %w", src.Namespace, src.Name, err)
		}
		if o.FromSpec || !sameChart(obj, tpl) || artifactOf(obj).URL == "" {
			return o.pullTemplate(ctx, hr, src, obj)
		}
		ch, got, err := o.fromArtifact(ctx, obj, src, false)
		if errors.As(err, new(unreachable)) {
			ch, got, perr := o.pullTemplate(ctx, hr, src, obj)
			got.From += " (the artifact is unreachable: " + err.Error() + ")"
			if perr != nil {
				return nil, got, fmt.Errorf("%v; and from the repository: %w", err, perr)
			}
			return ch, got, nil
		}
		return ch, got, err
	}
	return nil, Source{}, errors.New("a HelmRelease needs exactly one of spec.chart and spec.chartRef")
}

// pullHelmChartSpec reads the chart the HelmChart ns/name (obj, as a tree applies it, before
// source-controller made its artifact) asks for, as pullTemplate reads a HelmRelease's
// spec.chart: its spec is the same (chart, version, sourceRef in its own namespace,
// reconcileStrategy, valuesFiles), at generation 1.
func (o ChartOptions) pullHelmChartSpec(ctx context.Context, hr *v2.HelmRelease, obj map[string]any, ns, name string, src Source) (*chartv2.Chart, Source, error) {
	data, err := json.Marshal(obj["spec"])
	if err != nil {
		return nil, src, err
	}
	var tpl v2.HelmChartTemplateSpec
	if err := json.Unmarshal(data, &tpl); err != nil {
		return nil, src, fmt.Errorf("HelmChart %s/%s (spec.chartRef): spec: %w", ns, name, err)
	}
	tpl.SourceRef.Namespace = ns
	cp := hr.DeepCopy()
	cp.Spec.ChartRef, cp.Spec.Chart = nil, &v2.HelmChartTemplate{Spec: tpl}
	ch, src, err := o.pullTemplate(ctx, cp, src, nil)
	if err != nil {
		return nil, src, fmt.Errorf("HelmChart %s/%s (spec.chartRef): %w", ns, name, err)
	}
	return ch, src, nil
}

// artifact is a source's status.artifact.
type artifact struct{ URL, Digest, Revision string }

func artifactOf(obj map[string]any) artifact {
	status, _ := obj["status"].(map[string]any)
	a, _ := status["artifact"].(map[string]any)
	str := func(k string) string { s, _ := a[k].(string); return s }
	return artifact{URL: str("url"), Digest: str("digest"), Revision: str("revision")}
}

// sameChart reports whether the HelmChart helm-controller made asks for the chart the
// template asks for now (else its artifact is of another chart or version, or merged other
// values files).
func sameChart(obj map[string]any, tpl *v2.HelmChartTemplate) bool {
	spec, _ := obj["spec"].(map[string]any)
	ref, _ := spec["sourceRef"].(map[string]any)
	version := tpl.Spec.Version
	if version == "" {
		version = "*"
	}
	got, _ := spec["version"].(string)
	if got == "" {
		got = "*"
	}
	files, _ := spec["valuesFiles"].([]any)
	sameFiles := len(files) == len(tpl.Spec.ValuesFiles)
	for i := 0; sameFiles && i < len(files); i++ {
		sameFiles = files[i] == tpl.Spec.ValuesFiles[i]
	}
	ignore, _ := spec["ignoreMissingValuesFiles"].(bool)
	return spec["chart"] == tpl.Spec.Chart && got == version && ref["kind"] == tpl.Spec.SourceRef.Kind && ref["name"] == tpl.Spec.SourceRef.Name &&
		sameFiles && ignore == tpl.Spec.IgnoreMissingValuesFiles
}

// fromArtifact fetches the source's artifact, verifies it and loads the chart.
func (o ChartOptions) fromArtifact(ctx context.Context, obj map[string]any, src Source, withDigest bool) (*chartv2.Chart, Source, error) {
	a := artifactOf(obj)
	src.Revision = a.Revision
	if a.URL == "" {
		return nil, src, fmt.Errorf("%s %s/%s has no artifact yet (status.artifact): wait for source-controller, or check its Ready condition", src.Kind, src.Namespace, src.Name)
	}
	var d digest.Digest
	if a.Digest != "" {
		var err error
		if d, err = digest.Parse(a.Digest); err != nil {
			return nil, src, fmt.Errorf("%s %s/%s artifact digest %q: %w", src.Kind, src.Namespace, src.Name, a.Digest, err)
		}
	}
	data, from, err := o.Artifacts.fetch(d.String(), func() ([]byte, string, error) {
		data, from, err := o.fetchArtifact(ctx, a.URL)
		if err == nil && d != "" && d.Algorithm().FromBytes(data) != d {
			return nil, from, errDigest
		}
		return data, from, err
	})
	switch {
	case errors.Is(err, errDigest):
		return nil, src, fmt.Errorf("%s %s/%s artifact %s does not match its digest %s: not rendered", src.Kind, src.Namespace, src.Name, a.URL, a.Digest)
	case err != nil:
		return nil, src, unreachable{fmt.Errorf("%s %s/%s artifact %s: %w", src.Kind, src.Namespace, src.Name, a.URL, err)}
	}
	src.From = from
	ch, err := loader4.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, src, fmt.Errorf("%s %s/%s artifact: not a chart: %w", src.Kind, src.Namespace, src.Name, err)
	}
	if withDigest {
		if err := withRevisionDigest(ch, a.Revision); err != nil {
			return nil, src, fmt.Errorf("%s %s/%s: %w", src.Kind, src.Namespace, src.Name, err)
		}
	}
	return ch, src, nil
}

// withRevisionDigest appends the first 12 hex digits of the source revision's digest to the
// chart version as semver metadata, as helm-controller does for OCI sources (so that a
// re-pushed tag is an upgrade). revision is <tag>@<algo>:<hex> or <algo>:<hex>.
// xref: helm-controller internal/controller/helmrelease_controller.go
// mutateChartWithSourceRevision, parseSemverFromTag, extractDigestSubString.
func withRevisionDigest(ch *chartv2.Chart, revision string) error {
	ver, err := semver.NewVersion(ch.Metadata.Version)
	if err != nil {
		return fmt.Errorf("invalid chart version %s", ch.Metadata.Version)
	}
	dig := revision
	if tag, d, ok := strings.Cut(revision, "@"); ok {
		tv, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+"))
		if err == nil && !tv.Equal(ver) {
			return fmt.Errorf("artifact revision %s does not match chart version %s", tag, ch.Metadata.Version)
		}
		dig = d
	}
	_, hex, ok := strings.Cut(dig, ":")
	if !ok || strings.Contains(hex, ":") || len(hex) < 12 {
		return fmt.Errorf("invalid artifact revision %s", revision)
	}
	v, err := ver.SetMetadata(hex[:12])
	if err != nil {
		return err
	}
	ch.Metadata.Version = v.String()
	return nil
}

// fetchArtifact GETs an artifact URL; when this machine cannot reach it and it names an
// in-cluster service (source-controller advertises <svc>.<ns>.svc.cluster.local.), it asks
// the API server's service proxy for the same path.
func (o ChartOptions) fetchArtifact(ctx context.Context, raw string) ([]byte, string, error) {
	data, err := o.get(ctx, raw)
	if err == nil {
		return data, "artifact", nil
	}
	var status httpStatus
	if errors.As(err, &status) || o.Proxy == nil {
		return nil, "", err
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return nil, "", err
	}
	svc, ns, ok := serviceOf(u.Hostname())
	if !ok {
		return nil, "", err
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	data, perr = o.Proxy(ctx, ns, svc, port, u.Path)
	if perr != nil {
		return nil, "", fmt.Errorf("%v; through the API server's service proxy to %s/%s:%s: %w", err, ns, svc, port, perr)
	}
	return data, "artifact through the API server's service proxy", nil
}

// serviceOf reads <svc>.<ns>.svc[.<cluster domain>][.] as a service and namespace.
func serviceOf(host string) (string, string, bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) < 3 || parts[2] != "svc" || net.ParseIP(host) != nil {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// unreachable: an artifact could be fetched neither from its URL nor through the proxy.
type unreachable struct{ error }

func (e unreachable) Unwrap() error { return e.error }

// httpStatus is a non-200 answer: the server was reached.
type httpStatus struct{ url, status string }

func (e httpStatus) Error() string { return "GET " + e.url + ": " + e.status }

func (o ChartOptions) get(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, httpStatus{u, resp.Status}
	}
	return io.ReadAll(io.LimitReader(resp.Body, 256<<20))
}
