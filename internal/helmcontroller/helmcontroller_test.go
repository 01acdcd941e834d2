package helmcontroller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/helm-drift/helm-drift/internal/flux"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil4 "helm.sh/helm/v4/pkg/chart/v2/util"
	common4 "helm.sh/helm/v4/pkg/release/common"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIdentityOf(t *testing.T) {
	tests := []struct {
		spec v2.HelmReleaseSpec
		want Identity
	}{
		{v2.HelmReleaseSpec{}, Identity{"web", "apps", "apps"}},
		{v2.HelmReleaseSpec{TargetNamespace: "prod"}, Identity{"prod-web", "prod", "apps"}},
		{v2.HelmReleaseSpec{TargetNamespace: "prod", ReleaseName: "site", StorageNamespace: "store"}, Identity{"site", "prod", "store"}},
	}
	for _, tc := range tests {
		hr := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: tc.spec}
		if got := IdentityOf(hr); got != tc.want {
			t.Errorf("IdentityOf(%+v) = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
}

func TestWithRevisionDigest(t *testing.T) {
	const hex = "af5384fb5b848801bb22e69584ce224660e6da3ba46941373c15d388f07047e6"
	tests := []struct {
		version, revision, want, err string
	}{
		{"1.0.0", "1.0.0@sha256:" + hex, "1.0.0+af5384fb5b84", ""},
		{"1.0.0+build", "1.0.0_build@sha256:" + hex, "1.0.0+af5384fb5b84", ""},
		{"1.0.0", "sha256:" + hex, "1.0.0+af5384fb5b84", ""},
		{"1.0.0", "1.1.0@sha256:" + hex, "", "does not match chart version"},
		{"1.0.0", "latest", "", "invalid artifact revision"},
		{"not-semver", "sha256:" + hex, "", "invalid chart version"},
	}
	for _, tc := range tests {
		ch := &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "web", Version: tc.version}}
		err := withRevisionDigest(ch, tc.revision)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s: error %v, want %q", tc.version, tc.revision, err, tc.err)
		case tc.err == "" && (err != nil || ch.Metadata.Version != tc.want):
			t.Errorf("%s %s: %q (%v), want %q", tc.version, tc.revision, ch.Metadata.Version, err, tc.want)
		}
	}
}

func TestServiceOf(t *testing.T) {
	tests := map[string][2]string{
		"source-controller.flux-system.svc.cluster.local.": {"source-controller", "flux-system"},
		"source-controller.flux-system.svc":                {"source-controller", "flux-system"},
		"127.0.0.1":                                        {},
		"example.com":                                      {},
		"a.b.c.example.com":                                {},
	}
	for host, want := range tests {
		svc, ns, ok := serviceOf(host)
		if ok != (want[0] != "") || svc != want[0] || ns != want[1] {
			t.Errorf("serviceOf(%q) = %q, %q, %v; want %v", host, svc, ns, ok, want)
		}
	}
}

// chartArchive is a packaged one-template chart.
func chartArchive(t *testing.T) []byte {
	t.Helper()
	ch := &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*chartcommon.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {a: {{ .Values.a | quote }}}\n")}},
	}
	dir := t.TempDir()
	path, err := chartutil4.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// getter is a Getter over fixed objects.
type getter map[string]map[string]any

func (g getter) Get(_ context.Context, _, _, kind, namespace, name string) (map[string]any, error) {
	if m, ok := g[kind+"/"+namespace+"/"+name]; ok {
		return m, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind)}, name)
}

// TestLoadChartArtifact: the artifact is read from its URL and verified against its digest;
// an unreachable in-cluster URL goes through the service proxy; a digest mismatch renders
// nothing; the OCI chart version takes the revision's digest.
func TestLoadChartArtifact(t *testing.T) {
	data := chartArchive(t)
	dig := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer srv.Close()
	hr := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"},
		Spec: v2.HelmReleaseSpec{ChartRef: &v2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "web"}}}
	repo := func(url, digest string) getter {
		return getter{"OCIRepository/apps/web": {"status": map[string]any{"artifact": map[string]any{
			"url": url, "digest": digest, "revision": "1.0.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}}
	}
	ch, src, err := LoadChart(context.Background(), hr, ChartOptions{Get: repo(srv.URL+"/web.tar.gz", dig)})
	if err != nil || src.From != "artifact" || ch.Metadata.Version != "1.0.0+0123456789ab" {
		t.Fatalf("direct: %v, from %q, version %q", err, src.From, ch.Metadata.Version)
	}
	var asked string
	proxy := func(_ context.Context, ns, svc, port, path string) ([]byte, error) {
		asked = fmt.Sprintf("%s/%s:%s%s", ns, svc, port, path)
		return data, nil
	}
	if _, _, err = LoadChart(context.Background(), hr, ChartOptions{Get: repo("http://127.0.0.1:1/web.tar.gz", dig), Proxy: proxy}); err == nil || asked != "" {
		t.Fatalf("an unreachable address that names no service: %v, proxy asked %q", err, asked)
	}
	_, src, err = LoadChart(context.Background(), hr, ChartOptions{Get: repo("http://source-controller.flux-system.svc.cluster.local./ocirepository/apps/web/x.tar.gz", dig), Proxy: proxy})
	if err != nil || src.From != "artifact through the API server's service proxy" || asked != "flux-system/source-controller:80/ocirepository/apps/web/x.tar.gz" {
		t.Fatalf("proxy: %v, from %q, asked %q", err, src.From, asked)
	}
	if _, _, err := LoadChart(context.Background(), hr, ChartOptions{Get: repo(srv.URL+"/web.tar.gz", "sha256:"+strings.Repeat("0", 64))}); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("digest mismatch: %v", err)
	}
}

// TestArtifactsOnce: the HelmReleases of one run fetch an artifact once by its digest, each
// with a chart of its own; a corrupt artifact fails every HelmRelease that shares it; without
// a digest, each fetches.
func TestArtifactsOnce(t *testing.T) {
	data := chartArchive(t)
	dig := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if r.URL.Path == "/corrupt.tar.gz" {
			w.Write(data[:len(data)/2])
			return
		}
		w.Write(data)
	}))
	defer srv.Close()
	load := func(ns, path, digest string, a *Artifacts) (*chartv2.Chart, error) {
		hr := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: v2.HelmReleaseSpec{ChartRef: &v2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "web"}}}
		g := getter{"OCIRepository/" + ns + "/web": {"status": map[string]any{"artifact": map[string]any{
			"url": srv.URL + path, "digest": digest, "revision": "1.0.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}}
		ch, _, err := LoadChart(context.Background(), hr, ChartOptions{Get: g, Artifacts: a})
		return ch, err
	}
	var run Artifacts
	var charts []*chartv2.Chart
	for _, ns := range []string{"a", "b", "c"} {
		ch, err := load(ns, "/"+ns+".tar.gz", dig, &run)
		if err != nil {
			t.Fatal(err)
		}
		charts = append(charts, ch)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("three sources with one artifact: %d fetches, want 1", n)
	}
	if charts[0] == charts[1] || charts[0].Templates[0] == charts[1].Templates[0] {
		t.Error("two HelmReleases share one chart: the SDK changes the chart it renders")
	}
	fetches.Store(0)
	bad := "sha256:" + strings.Repeat("1", 64)
	for range 2 {
		if _, err := load("a", "/corrupt.tar.gz", bad, &run); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
			t.Errorf("corrupt artifact: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("corrupt artifact: %d fetches, want 1", n)
	}
	fetches.Store(0)
	for range 2 {
		if _, err := load("a", "/a.tar.gz", "", &run); err != nil {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("no digest: %d fetches, want 2", n)
	}
}

// TestPostRendererOrder: kustomize first, then common metadata, then the origin labels, which
// win over a common label of the same key.
func TestPostRendererOrder(t *testing.T) {
	hr := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: v2.HelmReleaseSpec{
		PostRenderers: []v2.PostRenderer{{Kustomize: &v2.Kustomize{
			Images:  []kustomize.Image{{Name: "nginx", NewTag: "1.28"}},
			Patches: []kustomize.Patch{{Target: &kustomize.Selector{Kind: "Deployment"}, Patch: "- op: add\n  path: /metadata/labels/patched\n  value: \"yes\""}},
		}}},
		CommonMetadata: &v2.CommonMetadata{Labels: map[string]string{"team": "platform", "helm.toolkit.fluxcd.io/name": "spoofed"}, Annotations: map[string]string{"owner": "ops"}},
	}}
	in := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
	out, err := PostRenderer(hr).Run(bytes.NewBufferString(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image: nginx:1.28", "patched: \"yes\"", "team: platform", "owner: ops", "helm.toolkit.fluxcd.io/name: web", "helm.toolkit.fluxcd.io/namespace: apps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("post-rendered output lacks %q:\n%s", want, out)
		}
	}
}

// TestNextReconcile follows helm-controller's decision table.
func TestNextReconcile(t *testing.T) {
	vals := map[string]any{"a": "1"}
	r := &Rendered{Identity: Identity{"web", "apps", "apps"}, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "web", Version: "1.0.0"}}, values: vals}
	deployed := func(version string) *release4.Release {
		return &release4.Release{Name: "web", Namespace: "apps", Version: 2, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "web", Version: version}}, Info: &release4.Info{Status: common4.StatusDeployed}}
	}
	hr := func(mutate func(*v2.HelmRelease)) *v2.HelmRelease {
		h := &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", Generation: 3}}
		h.Status.ObservedGeneration = 3
		h.Status.History = v2.Snapshots{{Name: "web", Namespace: "apps", Version: 2, ConfigDigest: ConfigDigest(vals)}}
		if mutate != nil {
			mutate(h)
		}
		return h
	}
	tests := map[string]struct {
		hr   *v2.HelmRelease
		last *release4.Release
		want string
	}{
		"suspended":   {hr(func(h *v2.HelmRelease) { h.Spec.Suspend = true }), deployed("1.0.0"), flux.NextNothing},
		"no release":  {hr(nil), nil, flux.NextInstall},
		"not its own": {hr(func(h *v2.HelmRelease) { h.Status.History = nil }), deployed("1.0.0"), flux.NextUpgrade},
		"new chart":   {hr(nil), deployed("0.9.0"), flux.NextUpgrade},
		"new values":  {hr(func(h *v2.HelmRelease) { h.Status.History[0].ConfigDigest = ConfigDigest(map[string]any{"a": "0"}) }), deployed("1.0.0"), flux.NextUpgrade},
		"new post-renderers": {hr(func(h *v2.HelmRelease) {
			h.Generation = 4
			h.Spec.PostRenderers = []v2.PostRenderer{{Kustomize: &v2.Kustomize{}}}
		}), deployed("1.0.0"), flux.NextUpgrade},
		"in sync, enabled": {hr(func(h *v2.HelmRelease) { h.Spec.DriftDetection = &v2.DriftDetection{Mode: v2.DriftDetectionEnabled} }), deployed("1.0.0"), flux.NextCorrect},
		"in sync, warn":    {hr(func(h *v2.HelmRelease) { h.Spec.DriftDetection = &v2.DriftDetection{Mode: v2.DriftDetectionWarn} }), deployed("1.0.0"), flux.NextNothing},
		"in sync, off":     {hr(nil), deployed("1.0.0"), flux.NextNothing},
		"pending": {hr(nil), func() *release4.Release {
			l := deployed("1.0.0")
			l.Info.Status = common4.StatusPendingUpgrade
			return l
		}(), flux.NextNothing},
	}
	for name, tc := range tests {
		if got := NextReconcile(tc.hr, tc.last, r); got.Action != tc.want {
			t.Errorf("%s: %s (%s), want %s", name, got.Action, got.Reason, tc.want)
		}
	}
}

// TestValuesWithheld: a values reference that fails says which and why, never its content;
// an optional one that is missing is skipped; a Secret from a stream may carry stringData.
func TestValuesWithheld(t *testing.T) {
	const marker = "VALUES-SECRET-MARKER"
	g := getter{
		"Secret/apps/bad":   {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "bad"}, "stringData": map[string]any{"values.yaml": marker + ": [unclosed"}},
		"Secret/apps/good":  {"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "good"}, "stringData": map[string]any{"password": marker}},
		"ConfigMap/apps/cm": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}, "data": map[string]any{"values.yaml": "a: 1\nb: {c: 2}\n"}},
	}
	hr := func(refs ...meta.ValuesReference) *v2.HelmRelease {
		return &v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: v2.HelmReleaseSpec{ValuesFrom: refs}}
	}
	_, err := Values(context.Background(), g, hr(meta.ValuesReference{Kind: "Secret", Name: "bad"}))
	if err == nil || strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), "apps/bad") {
		t.Errorf("bad values: %v", err)
	}
	vals, err := Values(context.Background(), g, hr(meta.ValuesReference{Kind: "ConfigMap", Name: "cm"},
		meta.ValuesReference{Kind: "Secret", Name: "good", ValuesKey: "password", TargetPath: "b.password"},
		meta.ValuesReference{Kind: "ConfigMap", Name: "missing", Optional: true}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := vals["b"].(map[string]any)
	if fmt.Sprint(vals["a"]) != "1" || b["password"] != marker || fmt.Sprint(b["c"]) != "2" {
		t.Errorf("values %v", vals)
	}
}
