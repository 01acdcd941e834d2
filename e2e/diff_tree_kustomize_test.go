package e2e

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
	"github.com/helm-drift/helm-drift/internal/sops"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

var (
	kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	helmCharts      = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// fleetSide is what differs between the two commits of TestDiffTreePredictsKustomizeController's
// repository.
type fleetSide struct {
	replicas      string // cluster-vars' REPLICAS (substituteFrom a ConfigMap)
	logLevel      string // the apps Kustomization's own postBuild.substitute LOG_LEVEL
	adminPassword string // cluster-secrets' ADMIN_PASSWORD (substituteFrom a Secret)
	webValues     string // apps/web-values.yaml, a configMapGenerator's file (name hashed)
	sopsSecret    string // apps/web-sops.yaml, a SOPS-encrypted Secret
	podinfoColor  string // apps/podinfo-color.bin, a SOPS-encrypted binary file a secretGenerator reads
	// apps/podinfo-settings.yaml, a SOPS-encrypted YAML file the same secretGenerator reads
	// (the same on both sides: testdata/sops/order/encrypted.yaml, which the sops library
	// encrypted, keys unsorted, with comments): kustomize-controller decrypts it through sops'
	// YAML store, and the generated Secret's hashed name is made from what that store writes.
	podinfoSettings string
	podinfoINI      string // apps/podinfo-app.ini: the same, an INI file (testdata/sops/order/encrypted.ini)
	// localGreeting is written into the template of charts/local, a chart of the repository
	// itself whose version stays 1.0.0, and localReplicas into its values.yaml, for its
	// dependency (webapp, from the HTTP repository: source-controller fetches it when it
	// packages the chart): HelmRelease local (reconcileStrategy ChartVersion) does not get the
	// change, localrev (Revision) does.
	localGreeting, localReplicas string
	// localvalsReplicas are HelmRelease localvals' own values for webapp: it reads charts/local
	// (ChartVersion) too, so its upgrade for them renders the chart source-controller packaged
	// for the base, not the head's files.
	localvalsReplicas string
	// removed are the base's HelmReleases of apps/removed.yaml, which the head drops: gone is
	// pruned (helm-controller uninstalls it), kept is annotated kustomize.toolkit.fluxcd.io/prune:
	// disabled (it stays).
	removed bool
	// movedTarget is HelmRelease moved's spec.targetNamespace ("" none): a new one moves the
	// release, which helm-controller uninstalls and installs anew (reinstall).
	movedTarget string
}

// fleetFiles is a Flux repository laid out as flux bootstrap and Flux's own example lay it out:
// clusters/e2e holds the GitRepository of the repository itself and the Kustomization that
// applies clusters/e2e (the bootstrap pair), the cluster's substitution variables (a ConfigMap
// and a Secret) and the apps Kustomization (postBuild substitutions from those and its own,
// SOPS decryption); apps/ is a kustomize overlay: a configMapGenerator of values whose hashed
// name kustomize writes into the HelmRelease (nameReference, as Flux's guide configures it), a
// SOPS-encrypted Secret of values, a secretGenerator of a SOPS-encrypted file, the chart
// sources, and three HelmReleases: web (our chart: substituted values, values from the
// generated ConfigMap and the encrypted Secret), podinfo (the corpus chart: a substituted
// replica count, a message from a Secret's substitution, a color from the generated Secret)
// and quiet (substitution disabled by annotation, so that a moved variable leaves it alone).
// clusters/e2e also holds the .sops.yaml of sops' creation rules, where Flux's SOPS guide
// writes it: not a manifest, and not in the GitRepository's artifact (source-controller leaves
// it out), so neither the controllers nor the preview read it.
func fleetFiles(ns, gitURL, repoURL, registry string, s fleetSide) map[string]string {
	return map[string]string{
		"clusters/e2e/flux-system.yaml": fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: %[1]s}
spec: {url: %[2]q, interval: 1h, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: fleet, namespace: %[1]s}
spec: {interval: 1h, path: ./clusters/e2e, prune: true, sourceRef: {kind: GitRepository, name: fleet}}
`, ns, gitURL),
		"clusters/e2e/.sops.yaml": "creation_rules:\n  - path_regex: .*.yaml\n    encrypted_regex: ^(data|stringData)$\n    age: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n",
		"clusters/e2e/vars.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: %[1]s}
data: {REPLICAS: %[2]q}
---
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets, namespace: %[1]s}
stringData: {ADMIN_PASSWORD: %[3]q}
`, ns, s.replicas, s.adminPassword),
		"clusters/e2e/apps.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: %[1]s}
spec:
  interval: 1h
  retryInterval: 5s
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  decryption: {provider: sops, secretRef: {name: sops-age}}
  postBuild:
    substitute: {LOG_LEVEL: %[2]q}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: cluster-secrets}
`, ns, s.logLevel),
		"apps/kustomization.yaml": fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s
resources: [sources.yaml, web.yaml, web-sops.yaml, podinfo.yaml, quiet.yaml, local.yaml, moved.yaml%[2]s]
configMapGenerator:
- name: web-values
  files: [values.yaml=web-values.yaml]
secretGenerator:
- name: podinfo-ui
  files: [color=podinfo-color.bin, settings.yaml=podinfo-settings.yaml, app.ini=podinfo-app.ini]
configurations: [kustomizeconfig.yaml]
`, ns, map[bool]string{true: ", removed.yaml"}[s.removed]),
		"apps/moved.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: moved, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true, createNamespace: true}
  upgrade: {disableWait: true}
%[2]s`, ns, map[bool]string{true: "  targetNamespace: " + s.movedTarget + "\n"}[s.movedTarget != ""]),
		"apps/removed.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: gone, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kept
  namespace: %[1]s
  annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
`, ns),
		"apps/kustomizeconfig.yaml": `nameReference:
- kind: ConfigMap
  version: v1
  fieldSpecs:
  - {path: spec/valuesFrom/name, kind: HelmRelease}
- kind: Secret
  version: v1
  fieldSpecs:
  - {path: spec/valuesFrom/name, kind: HelmRelease}
`,
		"apps/web-values.yaml":       s.webValues,
		"apps/web-sops.yaml":         s.sopsSecret,
		"apps/podinfo-color.bin":     s.podinfoColor,
		"apps/podinfo-settings.yaml": s.podinfoSettings,
		"apps/podinfo-app.ini":       s.podinfoINI,
		"apps/sources.yaml":          treeSources(ns, repoURL, registry),
		"apps/web.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  - {kind: Secret, name: web-sops, valuesKey: password, targetPath: password}
  values:
    replicas: ${REPLICAS}
    inlineLogLevel: ${LOG_LEVEL}
    headless: true
`, ns),
		"apps/podinfo.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: %[1]s}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: podinfo}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  valuesFrom:
  - {kind: Secret, name: podinfo-ui, valuesKey: color, targetPath: ui.color}
  values:
    replicaCount: ${REPLICAS}
    ui: {message: "${ADMIN_PASSWORD}"}
`, ns),
		"apps/quiet.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: quiet
  namespace: %[1]s
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  values: {replicas: 1, headless: true, inlineLogLevel: "${LOG_LEVEL}"}
`, ns),
		"charts/local/Chart.yaml":  "apiVersion: v2\nname: local\nversion: 1.0.0\ndependencies:\n- {name: webapp, version: 1.0.0, repository: " + repoURL + "}\n",
		"charts/local/values.yaml": "webapp: {headless: true, replicas: " + s.localReplicas + "}\n",
		"charts/local/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | quote }}}
data: {greeting: ` + fmt.Sprintf("%q", s.localGreeting) + `}
`,
		"apps/local.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: local, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: localrev, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, reconcileStrategy: Revision, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: localvals, namespace: %[1]s}
spec:
  interval: 1h
  chart:
    spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: fleet}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  values: {webapp: {replicas: %[2]s}}
`, ns, s.localvalsReplicas),
	}
}

// TestDiffTreePredictsKustomizeController is the acceptance test of diff tree against the real
// kustomize-controller, source-controller and helm-controller: the repository is served over
// Git's smart HTTP protocol (git http-backend) to source-controller, which kustomize-controller
// builds from (overlays, generators with hashed names, postBuild substitutions from ConfigMaps,
// Secrets and its own, the substitute: disabled annotation, SOPS decryption with an age key of
// a Secret and of a secretGenerator's file)
// and helm-controller installs from. The preview of the pull request (a branch) against main,
// made with no cluster and the age key, is then checked by letting the controllers reconcile
// main, fast-forwarding main to the branch and letting them reconcile again: for each
// HelmRelease the rows predicted are exactly the fields in which helm-controller's stored
// manifests of the two revisions differ, a release whose render does not change is not
// upgraded, and no value from a Secret (a SOPS-encrypted one, a substituted one) is shown.
func TestDiffTreePredictsKustomizeController(t *testing.T) {
	t.Parallel() // its own namespace, repository and Helm homes
	podinfo := corpusPodinfo(t, "kustomize-controller")
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)

	// Charts: webapp in an HTTP repository, podinfo from the corpus in the OCI registry.
	charts := chartRepository(t, h, filepath.Join(repoRoot, "testdata/charts/webapp"))
	pushChart(t, h, podinfo, "oci://"+cluster.Registry+"/"+ns)

	// The age keys: kustomize-controller reads them from the Kustomization's decryption
	// Secret, the preview from a file. One is the test's own; the other is the key
	// testdata/sops/order's file was encrypted for.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	fixtureKey, err := os.ReadFile(filepath.Join(repoRoot, "testdata/sops/age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := os.ReadFile(filepath.Join(repoRoot, "testdata/sops/order/encrypted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	appINI, err := os.ReadFile(filepath.Join(repoRoot, "testdata/sops/order/encrypted.ini"))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.agekey")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"+string(fixtureKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns},
		StringData: map[string]string{"age.agekey": id.String(), "fixture.agekey": string(fixtureKey)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The repository, served by git http-backend: main (the base), then the pull request's
	// branch (the head), whose every change is one a Flux repository's pull request makes.
	root := t.TempDir()
	repo := filepath.Join(root, "fleet")
	gitSrv := gitServer(t, root)
	base := fleetFiles(ns, gitSrv.URL+"/fleet", charts, cluster.Registry, fleetSide{
		replicas: "1", logLevel: "info", adminPassword: hrSecretMarker + "-subst-base",
		webValues:    "image: nginx:1.27\n",
		sopsSecret:   sopsSecret(t, ns, "web-sops", "password", hrSecretMarker+"-sops-base", id.Recipient()),
		podinfoColor: sopsBinary(t, hrSecretMarker+"-color-base", id.Recipient()), podinfoSettings: string(settings), podinfoINI: string(appINI),
		localGreeting: "hello", localReplicas: "1", localvalsReplicas: "1", removed: true,
	})
	head := fleetFiles(ns, gitSrv.URL+"/fleet", charts, cluster.Registry, fleetSide{
		replicas: "2", logLevel: "debug", adminPassword: hrSecretMarker + "-subst-head",
		webValues:    "image: nginx:1.28\n",
		sopsSecret:   sopsSecret(t, ns, "web-sops", "password", hrSecretMarker+"-sops-head", id.Recipient()),
		podinfoColor: sopsBinary(t, hrSecretMarker+"-color-head", id.Recipient()), podinfoSettings: string(settings), podinfoINI: string(appINI),
		localGreeting: "hello, world", localReplicas: "2", localvalsReplicas: "3", movedTarget: ns + "-b",
	})
	git := pullRequest(t, repo, base, head)

	// The preview, with no cluster.
	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), "diff", "tree", "--base", "main", "--head", "pr",
		"--plain-http", "--kube-version", "v1.34.2", "--chart-cache", filepath.Join(t.TempDir(), "cache"),
		"--sops-age-key-file", keyFile, "-o", "json")
	cmd.Dir, cmd.Env = repo, append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"), "SOPS_AGE_KEY=", "SOPS_AGE_KEY_FILE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("diff tree: %v, want exit 2\n%s%s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), hrSecretMarker) {
		t.Errorf("diff tree prints a value from a Secret:\n%s", stdout.String())
	}
	var doc treeJSON
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	predicted, next, notApplied := map[string][]string{}, map[string]string{}, map[string]int{}
	for _, e := range doc.HelmReleases {
		name := strings.TrimPrefix(e.HelmRelease, ns+"/")
		next[name] = e.Next
		if e.Report != nil {
			predicted[name] = rowsOf(e.Report)
			for _, o := range e.Report.Objects {
				for _, r := range o.Rows {
					if !r.Resolved {
						notApplied[name]++
					}
				}
			}
		}
	}
	// quiet's inputs are the same on both sides (its substitution is disabled): it is counted
	// as unchanged, not rendered, or rendered with nothing to do.
	if next["web"] != "upgrade" || next["podinfo"] != "upgrade" || (next["quiet"] != "" && next["quiet"] != "nothing") || len(predicted["quiet"]) != 0 {
		t.Fatalf("next reconciles %v (quiet's rows %v), want web and podinfo upgraded, quiet nothing\n%s", next, predicted["quiet"], stderr.String())
	}
	// charts/local's template changed, its version did not: local (reconcileStrategy
	// ChartVersion) shows the change, not applied; localrev (Revision) upgrades, its chart's
	// version carrying the merged commit.
	if next["local"] != "nothing" || next["localrev"] != "upgrade" || len(predicted["local"]) != 0 || next["localvals"] != "upgrade" || notApplied["localrev"] != 0 {
		t.Fatalf("next reconciles %v, rows %v (%v not applied): want local nothing (no rows: the base's chart is served), localrev and localvals upgraded\n%s", next, predicted, notApplied, stderr.String())
	}
	// moved's release moves to another namespace: helm-controller reinstalls it, under the name
	// the preview gives (shortened past 53 characters, as helm-controller shortens it).
	movedRelease := ""
	for _, e := range doc.HelmReleases {
		if e.HelmRelease == ns+"/moved" {
			movedRelease = e.Release
			if e.Namespace != ns+"-b" {
				t.Errorf("moved: release namespace %q, want %s-b", e.Namespace, ns)
			}
		}
	}
	if next["moved"] != "reinstall" || movedRelease == "" || movedRelease == "moved" {
		t.Fatalf("moved: next reconcile %q, release %q; want reinstall under a new name\n%s", next["moved"], movedRelease, stderr.String())
	}
	// The HelmReleases the head drops: gone is pruned and uninstalled, kept stays.
	if next["gone"] != "uninstall" || next["kept"] != "nothing" {
		t.Fatalf("next reconciles of the dropped HelmReleases: gone %q, kept %q; want uninstall and nothing\n%s", next["gone"], next["kept"], stderr.String())
	}

	// Each change names its substitution variables: those the HelmRelease refers to.
	for _, e := range doc.HelmReleases {
		if e.HelmRelease == ns+"/podinfo" && e.Report != nil {
			c := strings.Join(e.Report.Causes, "\n")
			if !strings.Contains(c, "${REPLICAS}") || !strings.Contains(c, "${ADMIN_PASSWORD}") || strings.Contains(c, "${LOG_LEVEL}") {
				t.Errorf("podinfo's causes %q: want ${REPLICAS} and ${ADMIN_PASSWORD}, not ${LOG_LEVEL} (podinfo does not refer to it)", c)
			}
		}
	}
	// Without the key: the encrypted Secret is only said to have changed, and each release
	// that reads an encrypted value (web the Secret, podinfo the Secret its generator makes of
	// an encrypted file) is named as not rendered (exit 3), never rendered from ciphertext.
	nokey := exec.Command(cmd.Path, slices.DeleteFunc(slices.Clone(cmd.Args[1:]), func(a string) bool { return a == "--sops-age-key-file" || a == keyFile })...)
	nokey.Dir, nokey.Env = cmd.Dir, cmd.Env
	stdout.Reset()
	stderr.Reset()
	nokey.Stdout, nokey.Stderr = &stdout, &stderr
	err = nokey.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("diff tree without the age key: %v, want exit 3\n%s", err, stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), hrSecretMarker) {
		t.Errorf("diff tree without the age key prints a value from a Secret")
	}
	for _, want := range []string{"HelmRelease " + ns + "/web: not rendered", "HelmRelease " + ns + "/podinfo: not rendered", "--sops-age-key-file",
		"web-sops (SOPS-encrypted, not decrypted): encrypted: changed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("diff tree without the age key: want %q\n%s", want, stderr.String())
		}
	}

	// Reconciled by the real controllers: main as the base, then main fast-forwarded to the
	// pull request.
	applyYAML(t, base["clusters/e2e/flux-system.yaml"])
	waitKustomization(t, ns, "apps", "")
	for _, name := range []string{"web", "podinfo", "quiet", "local", "localrev", "localvals", "moved", "gone", "kept"} {
		waitTreeRevision(t, ns, name, 1)
	}
	before := map[string]string{}
	for _, name := range []string{"web", "podinfo", "quiet", "local", "localrev", "localvals"} {
		before[name] = storedRelease(t, ns, name).Manifest
	}
	git("merge", "-q", "--ff-only", "pr")
	rev := headRevision(t, repo)
	requestReconcile(t, gitRepositories, ns, "fleet")
	// fleet applies the head's apps Kustomization (its own substitute moved) while apps may
	// already be applying the head with its base spec: helm-controller may upgrade twice, and
	// the end state is what the preview predicts.
	waitKustomization(t, ns, "fleet", rev)
	waitKustomization(t, ns, "apps", rev)
	for _, name := range []string{"web", "podinfo", "quiet"} {
		waitObserved(t, ns, name)
	}
	// localrev is upgraded once source-controller packaged the head's chart; by then local's
	// HelmChart has seen the head's revision too, and kept the chart it had.
	waitTreeRevision(t, ns, "localrev", 2)
	testenv.Eventually(t, 2*time.Minute, "HelmChart "+ns+"/"+ns+"-local saw the head", func() (bool, string) {
		hc, err := cluster.Dynamic.Resource(helmCharts).Namespace(ns).Get(context.Background(), ns+"-local", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		seen, _, _ := unstructured.NestedString(hc.Object, "status", "observedSourceArtifactRevision")
		version, _, _ := unstructured.NestedString(hc.Object, "status", "artifact", "revision")
		return strings.HasSuffix(seen, rev) && version == "1.0.0", fmt.Sprintf("source revision %q, artifact %q", seen, version)
	})
	waitObserved(t, ns, "local")
	// moved: the old release uninstalled, the new one installed (storage in the HelmRelease's
	// namespace) into the new namespace, at its first revision.
	testenv.Eventually(t, 2*time.Minute, "HelmRelease "+ns+"/moved reinstalled as "+movedRelease, func() (bool, string) {
		r, err := helm4Config(t, ns).Releases.Last(movedRelease)
		if err != nil {
			return false, err.Error()
		}
		_, old := helm4Config(t, ns).Releases.Last("moved")
		rel, _ := r.(*release4.Release)
		return old != nil && rel != nil && rel.Namespace == ns+"-b" && rel.Version == 1, fmt.Sprintf("the old release: %v; the new one: %v", old, rel != nil)
	})
	// gone's HelmRelease is deleted and its release uninstalled; kept's stays, installed.
	testenv.Eventually(t, 2*time.Minute, "HelmRelease "+ns+"/gone uninstalled", func() (bool, string) {
		_, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "gone", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("the HelmRelease: %v", err)
		}
		_, err = helm4Config(t, ns).Releases.Last("gone")
		return err != nil, fmt.Sprintf("the release: %v", err)
	})
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("HelmRelease kept after the head: %v, want it kept", err)
	}
	if v := storedRelease(t, ns, "kept").Version; v != 1 {
		t.Errorf("kept: at revision %d after the head, want 1", v)
	}
	waitTreeRevision(t, ns, "localvals", 2)
	for name, upgraded := range map[string]bool{"web": true, "podinfo": true, "quiet": false, "local": false, "localrev": true, "localvals": true} {
		if v := storedRelease(t, ns, name).Version; (v > 1) != upgraded {
			t.Errorf("%s: at revision %d after the head, want upgraded %v", name, v, upgraded)
		}
	}
	for _, name := range []string{"web", "podinfo", "localrev", "localvals"} {
		happened := manifestChanges(t, before[name], storedRelease(t, ns, name).Manifest, ns)
		if strings.Join(predicted[name], "\n") != strings.Join(happened, "\n") {
			t.Errorf("%s: predicted rows\n  %s\nthe controllers changed\n  %s", name, strings.Join(predicted[name], "\n  "), strings.Join(happened, "\n  "))
		}
		t.Logf("%s: %d rows predicted and seen: %s", name, len(happened), strings.Join(happened, "; "))
		if len(happened) == 0 {
			t.Errorf("%s: the controllers changed nothing: the test proves nothing", name)
		}
	}
	generatedAsController(t, ns, repo, keyFile)
}

// generatedAsController: the Secret the apps secretGenerator makes of SOPS-encrypted files has,
// read from the tree as diff tree reads it, the name (its hash) and the data that
// kustomize-controller gave it, which podinfo's valuesFrom names after nameReference.
func generatedAsController(t *testing.T, ns, repo, keyFile string) {
	t.Helper()
	hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "podinfo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, _, _ := unstructured.NestedSlice(hr.Object, "spec", "valuesFrom")
	var applied string
	if len(from) == 1 {
		applied, _, _ = unstructured.NestedString(from[0].(map[string]any), "name")
	}
	secret, err := cluster.Kube.CoreV1().Secrets(ns).Get(context.Background(), applied, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the generated Secret podinfo's valuesFrom names (%q): %v", applied, err)
	}
	ids, err := sops.LoadIdentities(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := fluxtree.Load(context.Background(), repo, fluxtree.Options{SOPS: ids, Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var mine map[string]any
	for _, h := range tree.HelmReleases {
		if h.Namespace == ns && h.Name == "podinfo" {
			from, _, _ := unstructured.NestedSlice(h.Object, "spec", "valuesFrom")
			if len(from) == 1 {
				name, _, _ := unstructured.NestedString(from[0].(map[string]any), "name")
				mine = h.Objects["/Secret/"+ns+"/"+name]
			}
		}
	}
	if mine == nil {
		t.Fatalf("the tree has no Secret named by podinfo's valuesFrom (problems %v); the controller applied %s", tree.Problems, applied)
	}
	if name, _, _ := unstructured.NestedString(mine, "metadata", "name"); name != applied {
		t.Errorf("the generated Secret is %s in the tree, %s as kustomize-controller applied it: the hash of its decrypted files differs", name, applied)
	}
	data, _, _ := unstructured.NestedStringMap(mine, "data")
	for _, k := range []string{"color", "settings.yaml", "app.ini"} {
		b, err := base64.StdEncoding.DecodeString(data[k])
		if err != nil || !bytes.Equal(b, secret.Data[k]) {
			t.Errorf("the generated Secret's %s: %d bytes in the tree, %d applied (values not shown)", k, len(b), len(secret.Data[k]))
		}
	}
}

// treeJSON is what the tests read of diff tree -o json.
type treeJSON struct {
	HelmReleases []struct {
		HelmRelease string       `json:"helmRelease"`
		Next        string       `json:"nextReconcile"`
		Release     string       `json:"release"`
		Namespace   string       `json:"namespace"`
		Report      *diff.Report `json:"report"`
	} `json:"helmReleases"`
	Notes []string `json:"notes"`
}

// sopsFile encrypts one file as the sops CLI does for one age recipient: each value with
// AES-256-GCM (a 32-byte IV, the value's path as additional data) under a data key that is
// age-encrypted and armored; the MAC is SHA-512 of every value in order, encrypted with the
// lastmodified time as additional data (neither kustomize-controller, by default, nor diff tree
// checks it).
type sopsFile struct {
	t         *testing.T
	dataKey   []byte
	recipient string
	armored   string
	modified  string
}

func newSOPSFile(t *testing.T, recipient *age.X25519Recipient) *sopsFile {
	t.Helper()
	f := &sopsFile{t: t, dataKey: make([]byte, 32), recipient: recipient.String(), modified: time.Now().UTC().Format(time.RFC3339)}
	rand.Read(f.dataKey)
	var armored bytes.Buffer
	aw := armor.NewWriter(&armored)
	w, err := age.Encrypt(aw, recipient)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f.dataKey)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	aw.Close()
	f.armored = strings.TrimSpace(armored.String())
	return f
}

// encrypt is plain encrypted at the path additionalData ("stringData:password:").
func (f *sopsFile) encrypt(plain, additionalData string) string {
	block, err := aes.NewCipher(f.dataKey)
	if err != nil {
		f.t.Fatal(err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, 32)
	if err != nil {
		f.t.Fatal(err)
	}
	iv := make([]byte, 32)
	rand.Read(iv)
	sealed := gcm.Seal(nil, iv, []byte(plain), []byte(additionalData))
	data, tag := sealed[:len(sealed)-gcm.Overhead()], sealed[len(sealed)-gcm.Overhead():]
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]", b64(data), b64(iv), b64(tag))
}

// mac is the file's encrypted MAC over its values, in order.
func (f *sopsFile) mac(values ...string) string {
	h := sha512.New()
	for _, v := range values {
		h.Write([]byte(v))
	}
	return f.encrypt(strings.ToUpper(hex.EncodeToString(h.Sum(nil))), f.modified)
}

// sopsSecret is Secret ns/name holding stringData key: value, encrypted as the sops CLI
// encrypts a Kubernetes Secret (encrypted_regex ^(data|stringData)$).
func sopsSecret(t *testing.T, ns, name, key, value string, recipient *age.X25519Recipient) string {
	f := newSOPSFile(t, recipient)
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
stringData:
  %s: %s
sops:
  age:
  - recipient: %s
    enc: |
      %s
  lastmodified: %q
  mac: %s
  encrypted_regex: ^(data|stringData)$
  version: 3.9.0
`, name, ns, key, f.encrypt(value, "stringData:"+key+":"), f.recipient,
		strings.ReplaceAll(f.armored, "\n", "\n      "), f.modified, f.mac("v1", "Secret", name, ns, value))
}

// sopsBinary is a file of content value encrypted as the sops CLI encrypts a binary file (a
// JSON envelope whose data is the file), as a secretGenerator's files source holds one.
func sopsBinary(t *testing.T, value string, recipient *age.X25519Recipient) string {
	f := newSOPSFile(t, recipient)
	doc := map[string]any{
		"data": f.encrypt(value, "data:"),
		"sops": map[string]any{
			"age":          []any{map[string]any{"recipient": f.recipient, "enc": f.armored + "\n"}},
			"lastmodified": f.modified,
			"mac":          f.mac(value),
			"version":      "3.9.0",
		},
	}
	out, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// headRevision is the commit HEAD of repo.
func headRevision(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// waitKustomization waits for Kustomization ns/name to be Ready with its latest generation
// applied, at the commit revision when it is not empty; on a timeout its condition says why.
func waitKustomization(t *testing.T, ns, name, revision string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("Kustomization %s/%s applied %s", ns, name, revision), func() (bool, string) {
		k, err := cluster.Dynamic.Resource(kustomizations).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		observed, _, _ := unstructured.NestedInt64(k.Object, "status", "observedGeneration")
		ready := condition(k, "Ready")
		return ready == "True" && strings.HasSuffix(applied, revision) && observed == k.GetGeneration(),
			fmt.Sprintf("Ready=%s (%s), applied %q, observed generation %d of %d", ready, conditionMessage(k, "Ready"), applied, observed, k.GetGeneration())
	})
}
