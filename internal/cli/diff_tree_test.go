package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil4 "helm.sh/helm/v4/pkg/chart/v2/util"
	repo4 "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// treeBase is a Flux repository laid out as flux bootstrap lays one out: a bootstrap
// Kustomization, a Kustomization of apps with substitutions from a ConfigMap and a Secret of
// the tree, a HelmRelease whose chart is in this repository and whose values come from
// spec.values and a ConfigMap, and a SOPS-encrypted Secret.
var treeBase = map[string]string{
	"clusters/prod/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://git.example.com/fleet.git, ref: {branch: main}, interval: 1m}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 10m
  path: ./clusters/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`,
	"clusters/prod/flux-system/kustomization.yaml": "resources: [gotk-sync.yaml]\n",
	"clusters/prod/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {replicas: "2"}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: cluster-secrets}
`,
	"clusters/prod/vars.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets, namespace: flux-system}
stringData: {token: s3cr3t-base-token}
`,
	"clusters/prod/sealed.yaml": `apiVersion: v1
kind: Secret
metadata: {name: sealed, namespace: flux-system}
data:
  password: "ENC[AES256_GCM,data:aaaa,type:str]"
sops:
  mac: "ENC[AES256_GCM,data:bbbb,type:str]"
  version: 3.9.0
`,
	"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml, values.yaml]\n",
	"apps/prod/web.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  values:
    replicas: ${replicas}
    greeting: ${greeting}
    token: ${token}
`,
	"apps/prod/values.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-values}
data:
  values.yaml: |
    image: nginx:1.27
`,
	"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"charts/web/templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        env:
        - {name: GREETING, value: {{ .Values.greeting | quote }}}
        - {name: TOKEN, value: {{ .Values.token | quote }}}
`,
}

// gitTree writes files into a new Git repository and commits them; it returns the directory.
func gitTree(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	git(t, dir, "init", "-q")
	commitTree(t, dir, "base")
	return dir
}

// commitTree commits every change of the repository dir.
func commitTree(t *testing.T, dir, message string) {
	t.Helper()
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message)
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
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

// runTree runs "diff tree" in dir and returns the exit code, stdout and stderr.
func runTree(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var out, errOut bytes.Buffer
	code := Run(append([]string{"diff", "tree", "--chart-cache", "off", "--kube-version", "v1.34.2"}, args...), nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestDiffTree: a change to a substitution variable (ConfigMap and Secret), a values ConfigMap
// and an encrypted Secret previews as the rows the chart renders from them, with their causes
// and helm-controller's upgrade, and no Secret value anywhere in any output.
func TestDiffTree(t *testing.T) {
	dir := gitTree(t, treeBase)
	code, out, errOut := runTree(t, dir, "--base", "HEAD")
	if code != ExitOK || !strings.Contains(errOut, "0 HelmReleases compared, 1 unchanged") {
		t.Fatalf("no change: exit %d, want 0\n%s%s", code, out, errOut)
	}
	writeTree(t, dir, map[string]string{
		"clusters/prod/vars.yaml":   strings.NewReplacer("hello", "bonjour", "s3cr3t-base-token", "s3cr3t-head-token").Replace(treeBase["clusters/prod/vars.yaml"]),
		"apps/prod/values.yaml":     strings.Replace(treeBase["apps/prod/values.yaml"], "1.27", "1.28", 1),
		"clusters/prod/sealed.yaml": strings.Replace(treeBase["clusters/prod/sealed.yaml"], "aaaa", "cccc", 1),
	})
	code, out, errOut = runTree(t, dir, "--base", "HEAD", "-o", "json")
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	doc := oneReport(t, out)
	e := doc.HelmReleases[0]
	rep := e.Report
	if e.HelmRelease != "web/web" || e.Context != "clusters/prod" || e.Next != "upgrade" {
		t.Errorf("row %s in %q next %q, want web/web in clusters/prod, upgrade", e.HelmRelease, e.Context, e.Next)
	}
	rows := map[string]bool{}
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			rows[o.Object+" "+r.Path] = r.Redacted
		}
	}
	for row, redacted := range map[string]bool{
		"Deployment.apps web/web spec.template.spec.containers[name=web].image":                    false,
		"Deployment.apps web/web spec.template.spec.containers[name=web].env[name=GREETING].value": false,
		"Deployment.apps web/web spec.template.spec.containers[name=web].env[name=TOKEN].value":    true,
	} {
		if got, ok := rows[row]; !ok || got != redacted {
			t.Errorf("row %s: present %v redacted %v, want redacted %v; rows %v", row, ok, got, redacted, rows)
		}
	}
	causes := strings.Join(rep.Causes, "\n")
	for _, want := range []string{"${greeting} (ConfigMap flux-system/cluster-vars)", "${token} (Secret flux-system/cluster-secrets)", ".values.yaml.image (valuesFrom ConfigMap web/web-values)"} {
		if !strings.Contains(causes, want) {
			t.Errorf("causes lack %q:\n%s", want, causes)
		}
	}
	if !strings.Contains(strings.Join(doc.Notes, "\n"), "Secret flux-system/sealed (SOPS-encrypted, not decrypted): encrypted: changed") {
		t.Errorf("notes %v: want the encrypted Secret changed", doc.Notes)
	}
	for _, format := range []string{"json", "yaml", "table", "markdown", "diff", "github", "html", "counts"} {
		_, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", format)
		for _, secret := range []string{"s3cr3t-base-token", "s3cr3t-head-token"} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("-o %s prints a value from a Secret", format)
			}
		}
	}
}

// TestDiffTreeBadInput: a broken YAML file, a Kustomization whose path does not exist and a
// HelmRelease whose chart is missing are each named, the rest is still previewed, exit 3.
func TestDiffTreeBadInput(t *testing.T) {
	dir := gitTree(t, treeBase)
	writeTree(t, dir, map[string]string{
		"clusters/prod/extra.yaml": strings.NewReplacer("name: apps", "name: extra", "./apps/prod", "./apps/extra").Replace(treeBase["clusters/prod/apps.yaml"]),
		"apps/extra/broken.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n",
		"clusters/prod/gone.yaml":  strings.NewReplacer("name: apps", "name: gone", "./apps/prod", "./apps/gone").Replace(treeBase["clusters/prod/apps.yaml"]),
		"apps/prod/values.yaml":    strings.Replace(treeBase["apps/prod/values.yaml"], "1.27", "1.28", 1),
		"apps/prod/other.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: other}
spec:
  interval: 10m
  chart: {spec: {chart: ./charts/missing, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}
`,
		"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml, values.yaml, other.yaml]\n",
	})
	code, out, errOut := runTree(t, dir, "--base", "HEAD")
	if code != ExitUnmeasured {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"Kustomization flux-system/extra (clusters/prod): kustomize: failed to decode Kubernetes YAML from apps/extra/broken.yaml",
		`Kustomization flux-system/gone (clusters/prod): spec.path "./apps/gone" does not exist`,
		"HelmRelease web/other: not rendered (head)",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "web/web") {
		t.Errorf("the rest of the tree is not previewed:\n%s", out)
	}
	if code, _, errOut := runTree(t, dir); code != ExitError || !strings.Contains(errOut, "--base") {
		t.Errorf("no --base: exit %d, want 1 naming --base: %s", code, errOut)
	}
	if code, _, errOut := runTree(t, dir, "--base", "no-such-branch"); code != ExitError || !strings.Contains(errOut, "no-such-branch") {
		t.Errorf("unknown base: exit %d, want 1 naming it: %s", code, errOut)
	}
}

// TestDiffTreeFluxExample: Flux's own example repository, as published: a change to the
// production podinfo values and chart version range previews podinfo's rendered change from the
// corpus chart; with --all the HelmReleases whose charts are not here are named as not
// rendered (exit 3), never shown as unchanged.
func TestDiffTreeFluxExample(t *testing.T) {
	repo, corpus := "../../../shared/flux-repos/flux2-kustomize-helm-example", "../../../shared/corpus"
	if _, err := os.Stat(repo); err != nil {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") != "" {
			t.Fatal("HELM_DRIFT_REQUIRE_CORPUS is set but ../shared/flux-repos is absent")
		}
		t.Skip("../shared/flux-repos is absent (a user's clone): Flux's example repository is not previewed")
	}
	files := map[string]string{}
	err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(repo, p)
		files[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := gitTree(t, files)
	abs, _ := filepath.Abs(corpus)
	empty := t.TempDir()
	mirrors := []string{"--chart-source", "https://stefanprodan.github.io/podinfo=" + abs,
		"--chart-source", "oci://quay.io=" + empty, "--chart-source", "oci://docker.io=" + empty}
	values := "apps/production/podinfo-values.yaml"
	writeTree(t, dir, map[string]string{values: strings.NewReplacer("podinfo.production", "podinfo.example.com", `">=1.0.0"`, `">=6.0.0"`).Replace(files[values])})
	code, out, errOut := runTree(t, dir, append([]string{"--base", "HEAD", "-o", "json"}, mirrors...)...)
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	var doc treeDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.HelmReleases) != 1 || doc.HelmReleases[0].Context != "clusters/production" || doc.HelmReleases[0].HelmRelease != "podinfo/podinfo" {
		t.Fatalf("want podinfo/podinfo of clusters/production alone (staging's is unchanged): %s", out)
	}
	rep := doc.HelmReleases[0].Report
	found := false
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			if strings.HasPrefix(o.Object, "HTTPRoute.gateway.networking.k8s.io podinfo/podinfo") && r.Path == "spec.hostnames[0]" && r.Chart == "podinfo.example.com" && r.Cluster == "podinfo.production" {
				found = true
			}
		}
	}
	if !found || !strings.Contains(strings.Join(rep.Causes, "\n"), ".httpRoute.hostnames (spec.values)") || !strings.Contains(strings.Join(rep.Causes, "\n"), "spec.chart") {
		t.Errorf("want the HTTPRoute's hostname row, caused by spec.values and spec.chart:\n%s", out)
	}
	code, out, errOut = runTree(t, dir, append([]string{"--base", "HEAD", "--all"}, mirrors...)...)
	if code != ExitUnmeasured {
		t.Fatalf("--all: exit %d, want 3\n%s%s", code, out, errOut)
	}
	// Said once per error, naming the HelmReleases it failed alike.
	for _, want := range []string{
		"could not measure 2 alike (clusters/production: HelmRelease cert-manager/cert-manager; clusters/staging: HelmRelease cert-manager/cert-manager): not rendered",
		"could not measure 2 alike (clusters/production: HelmRelease envoy-gateway-system/envoy-gateway; clusters/staging: HelmRelease envoy-gateway-system/envoy-gateway): not rendered",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--all: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "could not measure"); n != 2 {
		t.Errorf("--all: %d lines of could not measure, want one per error:\n%s", n, errOut)
	}
}

// TestDiffTreeOffline: charts from an HTTP Helm repository (a version range, so the index is
// read) are kept in the chart cache; with the repository gone, the same run renders the same
// output from the cache.
func TestDiffTreeOffline(t *testing.T) {
	charts := t.TempDir()
	ch, err := loader4.Load(filepath.Join(golden.Root(), "charts/webapp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil4.Save(ch, charts); err != nil {
		t.Fatal(err)
	}
	idx, err := repo4.IndexDirectory(charts, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(charts, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(charts)))
	web := func(replicas int) string {
		return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: %q, interval: 1h}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 1h
  chart: {spec: {chart: webapp, version: "1.x", sourceRef: {kind: HelmRepository, name: charts}}}
  values: {replicas: %d}
`, srv.URL, replicas)
	}
	dir := gitTree(t, map[string]string{"apps/web.yaml": web(1)})
	writeTree(t, dir, map[string]string{"apps/web.yaml": web(2)})
	cache := t.TempDir()
	args := []string{"--base", "HEAD", "--chart-cache", cache, "-o", "diff"}
	code, online, errOut := runTree(t, dir, args...)
	if code != ExitDrift || !strings.Contains(online, "+  replicas: 2") {
		t.Fatalf("online: exit %d, want 2 with the replicas row\n%s%s", code, online, errOut)
	}
	srv.Close()
	code, offline, errOut := runTree(t, dir, args...)
	if code != ExitDrift || offline != online {
		t.Errorf("offline, from the cache: exit %d\n%s\nwant the same output as online:\n%s\n%s", code, offline, online, errOut)
	}
	code, _, errOut = runTree(t, dir, "--base", "HEAD", "--chart-cache", t.TempDir())
	if code != ExitUnmeasured || !strings.Contains(errOut, "HelmRepository apps/charts") {
		t.Errorf("offline with an empty cache: exit %d, want 3 naming the HelmRepository:\n%s", code, errOut)
	}
}

// TestDiffTreeSOPS: a Secret the sops CLI encrypted for an age key (testdata/sops, from
// kustomize-controller's own tests), applied by a Kustomization that asks for SOPS decryption
// and read by a HelmRelease's valuesFrom: with the key given, diff tree decrypts it as
// kustomize-controller would and previews what the chart renders from it, redacted; without
// the key, the HelmRelease is named as not rendered (exit 3); the decrypted value is never
// printed.
func TestDiffTreeSOPS(t *testing.T) {
	root := golden.RepoRoot()
	// The age case goes on below; the PGP one (the key of kustomize-controller's own PGP
	// test, an RSA key) is the same up to the key.
	var dir, key string
	var secret []byte
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")
	parent := t // the age case's repository outlives its subtest
	for _, c := range []struct{ name, flag, key string }{
		{"pgp", "--sops-pgp-key-file", "pgp.asc"},
		{"age", "--sops-age-key-file", "age.agekey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			secret, err = os.ReadFile(filepath.Join(root, "testdata/sops", c.name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			files := sopsTree(map[string]string{
				"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml, secret.yaml]\n",
				"apps/prod/secret.yaml":        string(secret),
				"apps/prod/web.yaml":           sopsWeb(sopsWebValues),
			})
			dir = gitTree(parent, files)
			// The head reads the token from the encrypted Secret.
			writeTree(t, dir, map[string]string{"apps/prod/web.yaml": sopsWeb(sopsWebValues, "{kind: Secret, name: "+c.name+", valuesKey: key, targetPath: token}")})
			const plaintext = "value" // stringData.key decrypted

			code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
			if code != ExitUnmeasured || !strings.Contains(out+errOut, "SOPS-encrypted") {
				t.Errorf("without a key: exit %d, want 3 naming the encrypted Secret\n%s%s", code, out, errOut)
			}

			key = filepath.Join(root, "testdata/sops", c.key)
			code, out, errOut = runTree(t, dir, "--base", "HEAD", "-o", "json", c.flag, key)
			if code != ExitDrift {
				t.Fatalf("with the key: exit %d, want 2\n%s%s", code, out, errOut)
			}
			doc := oneReport(t, out)
			var token *diff.Row
			for _, o := range doc.HelmReleases[0].Report.Objects {
				for i, r := range o.Rows {
					if strings.HasSuffix(r.Path, "env[name=TOKEN].value") {
						token = &o.Rows[i]
					}
				}
			}
			if token == nil || !token.Redacted {
				t.Errorf("the token's row: %+v, want it, redacted", token)
			}
			if !strings.Contains(strings.Join(doc.Notes, "\n"), "Secret web/"+c.name+" (Kustomization flux-system/apps): SOPS-encrypted, decrypted with the keys given") {
				t.Errorf("notes %v: want the decrypted Secret named", doc.Notes)
			}
			for _, format := range []string{"json", "yaml", "table", "markdown", "diff", "github", "html", "counts"} {
				_, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", format, "-C", "-1", c.flag, key)
				if strings.Contains(out+errOut, `"`+plaintext+`"`) || strings.Contains(out+errOut, "TOKEN value: "+plaintext) || strings.Contains(out+errOut, ": "+plaintext+"\n") {
					t.Errorf("-o %s prints the decrypted value", format)
				}
			}
			if code, _, errOut = runTree(t, dir, "--base", "HEAD", c.flag, filepath.Join(t.TempDir(), "none")); code != ExitError || !strings.Contains(errOut, c.flag) {
				t.Errorf("a missing key file: exit %d, want 1 naming the flag\n%s", code, errOut)
			}
		})
	}
	if t.Failed() {
		return
	}

	// A key that opens nothing: named, exit 3.
	other := filepath.Join(t.TempDir(), "other.agekey")
	if err := os.WriteFile(other, []byte("AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQS6PXPC2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTree(t, dir, "--base", "HEAD", "--sops-age-key-file", other)
	if code == ExitOK || code == ExitDrift {
		t.Errorf("another key: exit %d\n%s%s", code, out, errOut)
	}

	// Only the encrypted Secret changes (sops re-wrote it): without a key the HelmRelease that
	// reads it is not counted unchanged but named as not rendered; with the key, the same
	// plaintext is no change.
	commitTree(t, dir, "the head reads the token")
	writeTree(t, dir, map[string]string{"apps/prod/secret.yaml": strings.Replace(string(secret), `lastmodified: "2024-11-12T13:33:42Z"`, `lastmodified: "2024-11-13T13:33:42Z"`, 1)})
	code, out, errOut = runTree(t, dir, "--base", "HEAD", "-o", "json")
	if code != ExitUnmeasured || !strings.Contains(errOut, "HelmRelease web/web: not rendered") || !strings.Contains(errOut, "Secret web/age (SOPS-encrypted, not decrypted): encrypted: changed") {
		t.Errorf("the encrypted Secret re-written, without a key: exit %d, want 3 naming web and the Secret\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runTree(t, dir, "--base", "HEAD", "--sops-age-key-file", key); code != ExitOK {
		t.Errorf("the encrypted Secret re-written, with the key: exit %d, want 0 (the same plaintext)\n%s%s", code, out, errOut)
	}
}

// TestDiffTreeSOPSGeneratorSources: files sops encrypted and read by a kustomize secretGenerator
// (a binary file, a dotenv file) or held in a Secret's value are decrypted as
// kustomize-controller decrypts them, with the key (testdata/sops/generator, from its own tests:
// each decrypts to key: value); the values the chart takes from them are redacted, their sizes
// those of the plaintext; without the key, the HelmRelease reading them is named as not
// rendered (exit 3), never rendered from the ciphertext.
func TestDiffTreeSOPSGeneratorSources(t *testing.T) {
	root := golden.RepoRoot()
	fixture := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, "testdata/sops/generator", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	files := sopsTree(map[string]string{
		"apps/prod/kustomization.yaml": `namespace: web
resources: [web.yaml, secret.yaml]
generatorOptions: {disableNameSuffixHash: true}
secretGenerator:
- {name: from-env, literals: [key=plain]}
- {name: from-file, literals: [key=plain]}
`,
		"apps/prod/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: secret}\nstringData: {key: plain}\n",
		"apps/prod/env.env":     fixture("env.env"),
		"apps/prod/file.txt":    fixture("file.txt"),
		"apps/prod/web.yaml": sopsWeb("{replicas: 1}",
			"{kind: Secret, name: from-env, valuesKey: key, targetPath: token}",
			"{kind: Secret, name: from-file, valuesKey: key, targetPath: greeting}",
			"{kind: Secret, name: secret, valuesKey: key, targetPath: image}"),
	})
	dir := gitTree(t, files)
	// The head reads the three from the encrypted files.
	writeTree(t, dir, map[string]string{
		"apps/prod/kustomization.yaml": `namespace: web
resources: [web.yaml, secret.yaml]
generatorOptions: {disableNameSuffixHash: true}
secretGenerator:
- {name: from-env, envs: [env.env]}
- {name: from-file, files: [key=file.txt]}
`,
		"apps/prod/secret.yaml": fixture("inside-secret.yaml"),
	})
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")

	code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
	if code != ExitUnmeasured || !strings.Contains(errOut, "HelmRelease web/web: not rendered (head)") || !strings.Contains(errOut, "SOPS-encrypted") {
		t.Errorf("without a key: exit %d, want 3 naming web as not rendered for an encrypted Secret\n%s%s", code, out, errOut)
	}

	code, out, errOut = runTree(t, dir, "--base", "HEAD", "-o", "json", "--sops-age-key-file", filepath.Join(root, "testdata/sops/age.agekey"))
	if code != ExitDrift {
		t.Fatalf("with the key: exit %d, want 2\n%s%s", code, out, errOut)
	}
	doc := oneReport(t, out)
	got := map[string]string{}
	for _, o := range doc.HelmReleases[0].Report.Objects {
		for _, r := range o.Rows {
			size := func(n *int) any {
				if n == nil {
					return "?"
				}
				return *n
			}
			got[r.Path] = fmt.Sprintf("redacted %v, %v bytes from %v", r.Redacted, size(r.ChartBytes), size(r.ClusterBytes))
		}
	}
	// "value" (5 bytes) where the base had "plain" (5 bytes): the plaintext, not the files.
	want := map[string]string{
		"spec.template.spec.containers[name=web].env[name=TOKEN].value":    "redacted true, 5 bytes from 5",
		"spec.template.spec.containers[name=web].env[name=GREETING].value": "redacted true, 5 bytes from 5",
		"spec.template.spec.containers[name=web].image":                    "redacted true, 5 bytes from 5",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v\nwant %v", got, want)
	}
	if strings.Contains(out+errOut, `"value"`) || strings.Contains(out+errOut, `"plain"`) {
		t.Errorf("a value from a Secret is printed:\n%s", out)
	}
}

// sopsTree is a repository whose apps Kustomization (apps/prod) asks for SOPS decryption, with
// the web chart, and the files given.
func sopsTree(files map[string]string) map[string]string {
	out := map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml":     treeBase["clusters/prod/flux-system/gotk-sync.yaml"],
		"clusters/prod/flux-system/kustomization.yaml": treeBase["clusters/prod/flux-system/kustomization.yaml"],
		"clusters/prod/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  decryption: {provider: sops, secretRef: {name: sops-age}}
`,
		"charts/web/Chart.yaml":         treeBase["charts/web/Chart.yaml"],
		"charts/web/templates/web.yaml": treeBase["charts/web/templates/web.yaml"],
	}
	for name, text := range files {
		out[name] = text
	}
	return out
}

// TestDiffTreeSOPSConfigMap: a SOPS-encrypted ConfigMap (kustomize-controller decrypts any
// kind) is, without a key, kept aside like an encrypted Secret: the HelmRelease whose values
// come from it is named as not rendered (exit 3), never rendered from its ciphertext.
func TestDiffTreeSOPSConfigMap(t *testing.T) {
	secret, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/sops/age.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	configMap := strings.Replace(string(secret), "kind: Secret", "kind: ConfigMap", 1)
	files := sopsTree(map[string]string{
		"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml]\n",
		"apps/prod/web.yaml":           sopsWeb(sopsWebValues),
	})
	dir := gitTree(t, files)
	writeTree(t, dir, map[string]string{
		"apps/prod/kustomization.yaml": "namespace: web\nresources: [web.yaml, values.yaml]\n",
		"apps/prod/values.yaml":        configMap,
		"apps/prod/web.yaml":           sopsWeb(sopsWebValues, "{kind: ConfigMap, name: age, valuesKey: key, targetPath: token}"),
	})
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")
	code, out, errOut := runTree(t, dir, "--base", "HEAD")
	if code != ExitUnmeasured || !strings.Contains(errOut, "valuesFrom ConfigMap web/age is SOPS-encrypted") {
		t.Errorf("exit %d, want 3 naming the encrypted ConfigMap\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "ENC[AES256_GCM") {
		t.Errorf("the ConfigMap's ciphertext is rendered:\n%s", out)
	}
}

// sopsWebValues are sopsWeb's values when valuesFrom sets none of them.
const sopsWebValues = "{replicas: 1, image: nginx:1.27, greeting: hi}"

// bootstrapped is a repository laid out by flux bootstrap (treeBase's flux-system) whose
// clusters/prod Kustomization applies the files given there, in name order, with the other
// files (a chart, say) beside them.
func bootstrapped(files ...map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range treeBase {
		if strings.HasPrefix(k, "clusters/prod/flux-system/") {
			out[k] = v
		}
	}
	resources := []string{"flux-system"}
	for _, f := range files {
		for k, v := range f {
			out[k] = v
			if name, ok := strings.CutPrefix(k, "clusters/prod/"); ok && !strings.Contains(name, "/") {
				resources = append(resources, name)
			}
		}
	}
	slices.Sort(resources[1:])
	out["clusters/prod/kustomization.yaml"] = "resources: [" + strings.Join(resources, ", ") + "]\n"
	return out
}

// namespacedWeb is HelmRelease web (sopsWeb, spec lines extra after its interval) in
// namespace web, after that Namespace.
func namespacedWeb(values, extra string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n---\n" +
		strings.Replace(strings.Replace(sopsWeb(values), "  interval: 10m\n", "  interval: 10m\n"+extra, 1),
			"metadata: {name: web}", "metadata: {name: web, namespace: web}", 1)
}

// sopsWeb is HelmRelease web (the chart charts/web from the repository) with spec.values
// values and the valuesFrom entries given.
func sopsWeb(values string, valuesFrom ...string) string {
	from := ""
	if len(valuesFrom) > 0 {
		from = "  valuesFrom:\n  - " + strings.Join(valuesFrom, "\n  - ") + "\n"
	}
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
` + from + "  values: " + values + "\n"
}

// oneReport decodes diff tree's -o json, which must hold one HelmRelease with its report.
func oneReport(t *testing.T, out string) treeDocument {
	t.Helper()
	var doc treeDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.HelmReleases) != 1 || doc.HelmReleases[0].Report == nil {
		t.Fatalf("want one HelmRelease with its report: %s", out)
	}
	return doc
}

// A chart from a Bucket is read from a local copy of the bucket that --chart-source maps the
// Bucket's URL to (https://ENDPOINT/BUCKET); without one, the HelmRelease is named as not
// rendered, the flag to give named too.
func TestDiffTreeBucketChart(t *testing.T) {
	root := golden.RepoRoot()
	web := func(replicas int) string {
		return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: web}
spec:
  interval: 1h
  chart:
    spec: {chart: ./webapp, sourceRef: {kind: Bucket, name: charts, namespace: flux-system}}
  values: {replicas: %d, headless: true}
`, replicas)
	}
	dir := gitTree(t, map[string]string{
		"sources/bucket.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: charts, namespace: flux-system}
spec: {interval: 1h, provider: generic, endpoint: minio.example.com, bucketName: charts}
`,
		"apps/web.yaml": web(2),
	})
	writeTree(t, dir, map[string]string{"apps/web.yaml": web(3)})

	code, out, errOut := runTree(t, dir, "--base", "HEAD", "--chart-source", "https://minio.example.com/charts="+filepath.Join(root, "testdata/charts"), "-o", "json")
	if code != ExitDrift {
		t.Fatalf("with the bucket's copy: exit %d, want 2\n%s%s", code, out, errOut)
	}
	doc := oneReport(t, out)
	var rows []string
	for _, o := range doc.HelmReleases[0].Report.Objects {
		for _, r := range o.Rows {
			rows = append(rows, o.Object+" "+r.Path)
		}
	}
	if strings.Join(rows, "\n") != "Deployment.apps web/web spec.replicas" {
		t.Errorf("rows %q, want the replicas only", rows)
	}

	code, out, errOut = runTree(t, dir, "--base", "HEAD")
	if code != ExitUnmeasured || !strings.Contains(errOut, "HelmRelease web/web: not rendered") || !strings.Contains(errOut, "--chart-source https://minio.example.com/charts=DIR)") {
		t.Errorf("without a copy of the bucket: exit %d, want 3 naming web and the flag\n%s%s", code, out, errOut)
	}
}
