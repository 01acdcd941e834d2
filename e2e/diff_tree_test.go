package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// treeFiles is the test's Flux repository at one commit: an HTTP Helm repository and an OCI
// registry as sources, four HelmReleases (web: spec.chart with values from a ConfigMap and a
// Secret, and the chart's values files webValuesFiles lists; podinfo: the corpus chart by
// chartRef; other: a second release of webapp; kept: a third, of web's chart version, whose
// upgrades preserve its values).
func treeFiles(ns, repoURL, registry, webVersion, webValuesFiles, logLevel, password, podinfoReplicas, otherInterval, keptValues string) map[string]string {
	if webValuesFiles != "" {
		webValuesFiles = ", valuesFiles: " + webValuesFiles
	}
	return map[string]string{
		"apps/sources.yaml": treeSources(ns, repoURL, registry),
		"apps/web.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: web-values, namespace: %[1]s}
data:
  values.yaml: "inlineLogLevel: %[3]s\n"
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: %[1]s}
stringData:
  values.yaml: "password: %[4]s\n"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: %[2]q, sourceRef: {kind: HelmRepository, name: charts}%[5]s}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  - {kind: Secret, name: web-secret}
  values: {replicas: 1, headless: true}
`, ns, webVersion, logLevel, password, webValuesFiles),
		"apps/podinfo.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: %[1]s}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: podinfo}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  values: {replicaCount: %[2]s}
`, ns, podinfoReplicas),
		"apps/kept.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: kept, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: %[2]q, sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  upgrade: {disableWait: true, preserveValues: true}
  values: %[3]s
`, ns, webVersion, keptValues),
		"apps/other.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: other, namespace: %[1]s}
spec:
  interval: %[2]s
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  values: {replicas: 3, headless: true}
`, ns, otherInterval),
	}
}

// TestDiffTreePredictsHelmController is the acceptance test of diff tree against the real
// helm-controller and source-controller: a Git repository made by the test (two commits), charts
// from a real HTTP Helm repository and the test environment's OCI registry (plain HTTP). The
// preview of head against base, made with no cluster, is then checked by applying the base,
// letting helm-controller install it, applying the head and letting it upgrade: for each
// HelmRelease the rows predicted are exactly the fields in which helm-controller's stored
// manifests of the two revisions differ (every predicted change happens, nothing unpredicted
// does), an edit helm-controller ignores upgrades nothing, and no value from a Secret is shown.
func TestDiffTreePredictsHelmController(t *testing.T) {
	t.Parallel() // its own namespace, repository and Helm homes
	podinfo := corpusPodinfo(t, "helm-controller")
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)

	// Charts: webapp 1.0.0 and 1.1.0 (another default image, and a values file that
	// source-controller merges when the head lists it in valuesFiles: a third image and a tier
	// that renders one more object) in an HTTP repository; podinfo from the corpus in the OCI
	// registry.
	v11 := filepath.Join(t.TempDir(), "webapp")
	copyDir(t, filepath.Join(repoRoot, "testdata/charts/webapp"), v11)
	replaceIn(t, filepath.Join(v11, "Chart.yaml"), "version: 1.0.0", "version: 1.1.0")
	replaceIn(t, filepath.Join(v11, "values.yaml"), "image: nginx:1.27", "image: nginx:1.28")
	writeFiles(t, v11, map[string]string{
		"values-prod.yaml": "image: nginx:1.29\ntier: prod\n",
		"templates/tier.yaml": "{{- with .Values.tier }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ $.Release.Name }}-tier}\n" +
			"data: {tier: {{ . | quote }}}\n{{- end }}\n",
		// What the cluster serves, asked by kind as charts ask it: helm-controller's render
		// (discovery) answers true, helm template's offline set false.
		"templates/pdb.yaml": "{{- if .Capabilities.APIVersions.Has \"policy/v1/PodDisruptionBudget\" }}\napiVersion: policy/v1\nkind: PodDisruptionBudget\n" +
			"metadata: {name: {{ .Release.Name }}}\nspec: {minAvailable: 1, selector: {matchLabels: {app: {{ .Release.Name }}}}}\n" +
			"{{- else }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-no-pdb}\ndata: {pdb: \"not served\"}\n{{- end }}\n",
		// What the cluster no longer serves (since Kubernetes 1.25), asked as older charts ask
		// it: helm template's fixed set answers true, the cluster false, and so must the preview.
		"templates/legacy.yaml": "{{- if .Capabilities.APIVersions.Has \"policy/v1beta1\" }}\napiVersion: v1\nkind: ConfigMap\n" +
			"metadata: {name: {{ .Release.Name }}-legacy}\ndata: {policy: v1beta1}\n{{- end }}\n",
	})
	charts := chartRepository(t, h, filepath.Join(repoRoot, "testdata/charts/webapp"), v11)
	pushChart(t, h, podinfo, "oci://"+cluster.Registry+"/"+ns)

	secretBase, secretHead := hrSecretMarker+"-base", hrSecretMarker+"-head"
	// kept: the head leaves its replicas to the chart and sets a log level; with
	// preserveValues, helm-controller keeps the base's replicas and the base chart's image.
	base := treeFiles(ns, charts, cluster.Registry, "1.0.0", "", "info", secretBase, "1", "1h", "{replicas: 3, headless: true}")
	head := treeFiles(ns, charts, cluster.Registry, "1.1.0", "[values.yaml, values-prod.yaml]", "debug", secretHead, "2", "2h", "{headless: true, inlineLogLevel: warn}")
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=e2e@example.com", "-c", "user.name=e2e"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	writeFiles(t, repo, base)
	git("add", "-A")
	git("commit", "-qm", "base")
	baseRev := git("rev-parse", "HEAD")
	writeFiles(t, repo, head)
	git("commit", "-qam", "head")

	// The preview, with no cluster: KUBECONFIG points at nothing; --live reads the test
	// environment's.
	preview := func(live bool) treeJSON {
		t.Helper()
		args := []string{"diff", "tree", "--base", baseRev, "--head", "HEAD", "--plain-http", "--kube-version", "v1.34.2",
			"--chart-cache", filepath.Join(t.TempDir(), "cache"), "-o", "json"}
		kubeconfig := filepath.Join(t.TempDir(), "none")
		if live {
			args, kubeconfig = append(args, "--live"), cluster.Kubeconfig
		}
		cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), args...)
		cmd.Dir, cmd.Env = repo, append(os.Environ(), "KUBECONFIG="+kubeconfig)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("diff tree (live %v): %v, want exit 2\n%s%s", live, err, stdout.String(), stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), hrSecretMarker) {
			t.Errorf("diff tree prints a value from a Secret")
		}
		var doc treeJSON
		if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
			t.Fatalf("%v\n%s", err, stdout.String())
		}
		return doc
	}
	// liveOf is each row's Live of HelmRelease name: "object path" to what the cluster holds.
	liveOf := func(doc treeJSON, name string) map[string]string {
		out := map[string]string{}
		for _, e := range doc.HelmReleases {
			if e.HelmRelease == ns+"/"+name && e.Report != nil {
				for _, o := range e.Report.Objects {
					for _, r := range o.Rows {
						out[o.Object+" "+r.Path] = r.Live
					}
				}
			}
		}
		return out
	}
	doc := preview(false)
	predicted, next := map[string][]string{}, map[string]string{}
	for _, e := range doc.HelmReleases {
		name := strings.TrimPrefix(e.HelmRelease, ns+"/")
		next[name] = e.Next
		if e.Report != nil {
			predicted[name] = rowsOf(e.Report)
		}
	}
	if next["web"] != "upgrade" || next["podinfo"] != "upgrade" || next["kept"] != "upgrade" || next["other"] != "nothing" || len(predicted["other"]) != 0 {
		t.Fatalf("next reconciles %v (other's rows %v), want web, podinfo and kept upgraded, other nothing", next, predicted["other"])
	}
	keptRows := strings.Join(predicted["kept"], "\n")
	if !strings.Contains(keptRows, "env[name=LOG_LEVEL]") || strings.Contains(keptRows, "].image") || strings.Contains(keptRows, "spec.replicas") {
		t.Errorf("kept (upgrade.preserveValues): want the log level's row alone of its values, the base's replicas and the base chart's image kept: %v", predicted["kept"])
	}
	// The chart asks for the PodDisruptionBudget by kind, and gets the cluster's answer.
	if !strings.Contains(strings.Join(predicted["web"], "\n"), "PodDisruptionBudget.policy "+ns+"/web (whole object)") {
		t.Errorf("web: the head's chart renders a PodDisruptionBudget where the cluster serves policy/v1/PodDisruptionBudget, yet the preview does not: %v", predicted["web"])
	}
	// The values file the head lists is merged as source-controller merges it.
	if !strings.Contains(strings.Join(predicted["web"], "\n"), "ConfigMap "+ns+"/web-tier ") {
		t.Errorf("web: the head's valuesFiles sets a tier, yet the preview renders no ConfigMap web-tier: %v", predicted["web"])
	}
	// Before the base is installed: the objects of both sides absent; the one the head adds
	// absent as in the base.
	added := []string{"ConfigMap " + ns + "/web-tier (whole object)", "PodDisruptionBudget.policy " + ns + "/web (whole object)"}
	l := liveOf(preview(true), "web")
	for _, row := range predicted["web"] {
		want := diff.LiveAbsent
		if slices.Contains(added, row) {
			want = diff.LiveBase
		}
		if l[row] != want {
			t.Errorf("--live before the base is installed: %s is %q, want %q", row, l[row], want)
		}
	}

	// Reconciled by the real controllers: the base, then the head.
	for _, f := range []string{"apps/sources.yaml", "apps/web.yaml", "apps/podinfo.yaml", "apps/other.yaml", "apps/kept.yaml"} {
		applyYAML(t, base[f])
	}
	for _, name := range []string{"web", "podinfo", "other", "kept"} {
		waitTreeRevision(t, ns, name, 1)
	}
	image := "Deployment.apps " + ns + "/web spec.template.spec.containers[name=web].image"
	for row, live := range liveOf(preview(true), "web") {
		if live != diff.LiveBase {
			t.Errorf("--live after the base: %s holds %q, want the base's value", row, live)
		}
	}
	patchImage(t, ns, "web", "nginx:drifted")
	if got := liveOf(preview(true), "web")[image]; got != diff.LiveOther {
		t.Errorf("--live after an edit of the image: %q, want another value (drift the merge overwrites)", got)
	}
	before := map[string]string{}
	for _, name := range []string{"web", "podinfo", "other", "kept"} {
		before[name] = storedRelease(t, ns, name).Manifest
	}
	for _, f := range []string{"apps/web.yaml", "apps/podinfo.yaml", "apps/other.yaml", "apps/kept.yaml"} {
		applyYAML(t, head[f])
	}
	waitTreeRevision(t, ns, "web", 2)
	waitTreeRevision(t, ns, "podinfo", 2)
	waitTreeRevision(t, ns, "kept", 2)
	waitObserved(t, ns, "other")
	if v := storedRelease(t, ns, "other").Version; v != 1 {
		t.Errorf("other: revision %d after an interval edit, want 1 (helm-controller does not upgrade)", v)
	}
	for row, live := range liveOf(preview(true), "web") {
		if live != diff.LiveHead {
			t.Errorf("--live after the head: %s holds %q, want the head's value", row, live)
		}
	}
	for _, name := range []string{"web", "podinfo", "kept"} {
		happened := manifestChanges(t, before[name], storedRelease(t, ns, name).Manifest, ns)
		if strings.Join(predicted[name], "\n") != strings.Join(happened, "\n") {
			t.Errorf("%s: predicted rows\n  %s\nhelm-controller changed\n  %s", name, strings.Join(predicted[name], "\n  "), strings.Join(happened, "\n  "))
		}
		t.Logf("%s: %d rows predicted and seen: %s", name, len(happened), strings.Join(happened, "; "))
		if len(happened) == 0 {
			t.Errorf("%s: helm-controller changed nothing: the test proves nothing", name)
		}
	}
	// The head's values files make source-controller version web's chart with its HelmChart's
	// generation (1.1.0+2: made at the base, changed by the head); the preview with no
	// cluster predicted the same version, and said it cannot know the generation for sure.
	installed := storedRelease(t, ns, "web").Chart.Metadata.Version
	var causes []string
	for _, e := range doc.HelmReleases {
		if e.HelmRelease == ns+"/web" && e.Report != nil {
			causes = e.Report.Causes
		}
	}
	if !strings.Contains(strings.Join(causes, "\n"), "webapp "+installed+" ") || !strings.Contains(installed, "+") {
		t.Errorf("web: helm-controller installed chart version %s; the preview predicted the causes %q", installed, causes)
	}

	// kept drops a key of the base's values under upgrade.preserveValues: the preview says
	// every later reconcile upgrades it again, and helm-controller does, with the same objects.
	var keptCauses []string
	for _, e := range doc.HelmReleases {
		if e.HelmRelease == ns+"/kept" && e.Report != nil {
			keptCauses = e.Report.Causes
		}
	}
	if !strings.Contains(strings.Join(keptCauses, "\n"), "every later reconcile") {
		t.Errorf("kept: the preview does not say helm-controller upgrades it on every reconcile: %q", keptCauses)
	}
	last := storedRelease(t, ns, "kept")
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Patch(context.Background(), "kept", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "kept upgraded again by the requested reconcile", func() (bool, string) {
		v := storedRelease(t, ns, "kept").Version
		return v > last.Version, fmt.Sprintf("revision %d", v)
	})
	if rows := manifestChanges(t, last.Manifest, storedRelease(t, ns, "kept").Manifest, ns); len(rows) > 0 {
		t.Errorf("kept: upgraded again with other objects: %v", rows)
	}
}

// patchImage sets the image of Deployment ns/name's first container, as a person would.
func patchImage(t *testing.T, ns, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// rowsOf lists a report's rows as "object path", sorted.
func rowsOf(r *diff.Report) []string {
	var out []string
	for _, o := range r.Objects {
		for _, row := range o.Rows {
			out = append(out, o.Object+" "+row.Path)
		}
	}
	for _, p := range r.Prune {
		out = append(out, p.Object+" (pruned)")
	}
	sort.Strings(out)
	return out
}

// manifestChanges are the rows between two stored manifests of a release, compared as diff tree
// compares its two renders.
func manifestChanges(t *testing.T, before, after, ns string) []string {
	t.Helper()
	rep, err := diff.CompareSets(manifestObjects(t, before), manifestObjects(t, after), diff.SetOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return rowsOf(rep)
}

// waitTreeRevision waits for HelmRelease ns/name to be Ready at Helm revision want or a later
// one: helm-controller upgrades a release with upgrade.preserveValues again on a later
// reconcile, with the same manifest (it compares the values it composed with those Helm
// stored, which --reuse-values merged), and such a reconcile may come before this looks.
// xref: helm-controller internal/reconcile/state.go (VerifyRelease, ErrConfigDigest).
func waitTreeRevision(t *testing.T, ns, name string, want int64) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("HelmRelease %s/%s at revision %d", ns, name, want), func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(history) == 0 {
			return false, "no history"
		}
		v, _, _ := unstructured.NestedInt64(history[0].(map[string]any), "version")
		ready := condition(hr, "Ready")
		return v >= want && ready == "True", fmt.Sprintf("revision %d, Ready=%s", v, ready)
	})
}

// waitObserved waits for helm-controller to have reconciled HelmRelease ns/name's latest
// generation.
func waitObserved(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("HelmRelease %s/%s reconciled", ns, name), func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		observed, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		return observed == hr.GetGeneration() && condition(hr, "Ready") == "True", fmt.Sprintf("observed %d of %d", observed, hr.GetGeneration())
	})
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func replaceIn(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), old) {
		t.Fatalf("%s: %v (or no %q)", file, err, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the files of src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFiles(t, dst, map[string]string{rel: string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeSources are the chart sources of the tree tests' repositories in namespace ns: the HTTP
// Helm repository charts at repoURL, and the OCIRepository podinfo in the test registry.
func treeSources(ns, repoURL, registry string) string {
	return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo, namespace: %[1]s}
spec:
  url: oci://%[3]s/%[1]s/podinfo
  insecure: true
  interval: 1h
  ref: {semver: ">=6.0.0"}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
`, ns, repoURL, registry)
}

// corpusPodinfo is the corpus chart podinfo (../shared/corpus/podinfo). The test is skipped
// when the corpus is absent (a user's clone), and fails when HELM_DRIFT_REQUIRE_CORPUS is set;
// checked names what the preview would have been checked against.
func corpusPodinfo(t *testing.T, checked string) string {
	t.Helper()
	podinfo := filepath.Join(repoRoot, "../shared/corpus/podinfo")
	if _, err := os.Stat(podinfo); err != nil {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") != "" {
			t.Fatal("HELM_DRIFT_REQUIRE_CORPUS is set but ../shared/corpus/podinfo is absent")
		}
		t.Skip("../shared/corpus is absent (a user's clone): the preview is not checked against " + checked)
	}
	return podinfo
}

// chartRepository packages the charts at dirs into an HTTP Helm repository (their index.yaml)
// served on loopback for the test's duration; it returns its URL.
func chartRepository(t *testing.T, h *helmCLI, dirs ...string) string {
	t.Helper()
	charts := t.TempDir()
	for _, d := range dirs {
		h.run(t, false, nil, "package", d, "-d", charts)
	}
	h.run(t, false, nil, "repo", "index", charts)
	srv := httptest.NewServer(http.FileServer(http.Dir(charts)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// pushChart packages the chart at dir and pushes it to the OCI repository repo (plain HTTP).
func pushChart(t *testing.T, h *helmCLI, dir, repo string) {
	t.Helper()
	pkg := t.TempDir()
	h.run(t, false, nil, "package", dir, "-d", pkg)
	tgz, _ := filepath.Glob(filepath.Join(pkg, "*.tgz"))
	if len(tgz) != 1 {
		t.Fatalf("helm package %s: %v", dir, tgz)
	}
	h.run(t, false, nil, "push", tgz[0], repo, "--plain-http")
}
