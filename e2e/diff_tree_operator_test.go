package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// operatorFiles is a Flux repository laid out for the Flux Operator, as such repositories lay
// it out: no bootstrap pair (a FluxInstance makes the GitRepository and the first
// Kustomization in the cluster from kubernetes/flux/cluster); that Kustomization, cluster-apps,
// applies kubernetes/apps, whose objects are the cluster's substitution variables (a ConfigMap
// and a SOPS-encrypted Secret, which cluster-apps itself applies and substitutes from) and the
// apps' Kustomizations (ks.yaml), to which it gives SOPS decryption and the same substitutions
// by a patch. The app web is a HelmRelease of webapp whose replicas and password are
// substituted.
func operatorFiles(ns, repoURL, replicas, secret string) map[string]string {
	substitutions := `
    substituteFrom:
    - {kind: ConfigMap, name: cluster-settings}
    - {kind: Secret, name: cluster-secrets}`
	return map[string]string{
		"kubernetes/flux/cluster/ks.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: cluster-apps, namespace: %[1]s}
spec:
  interval: 1h
  retryInterval: 5s
  path: ./kubernetes/apps
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  decryption: {provider: sops, secretRef: {name: sops-age}}
  postBuild:%[2]s
  patches:
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: |-
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata: {name: all}
      spec:
        decryption: {provider: sops, secretRef: {name: sops-age}}
        postBuild:%[3]s
`, ns, substitutions, strings.ReplaceAll(substitutions, "\n", "\n      ")),
		"kubernetes/apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cluster-settings.yaml, cluster-secrets.sops.yaml, web/ks.yaml]\n",
		"kubernetes/apps/cluster-settings.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-settings, namespace: %s}
data: {REPLICAS: %q}
`, ns, replicas),
		"kubernetes/apps/cluster-secrets.sops.yaml": secret,
		"kubernetes/apps/web/ks.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: %s}
spec:
  interval: 1h
  retryInterval: 5s
  path: ./kubernetes/apps/web/app
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
`, ns),
		"kubernetes/apps/web/app/kustomization.yaml": fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\nresources: [helmrelease.yaml, pinned.yaml]\n", ns),
		// pinned's values ConfigMap is created once, never updated (ssa: IfNotPresent): the
		// pull request's log level is not applied.
		"kubernetes/apps/web/app/pinned.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: pinned-values
  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}
data:
  values.yaml: "inlineLogLevel: %s"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: pinned}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  valuesFrom: [{kind: ConfigMap, name: pinned-values}]
  values: {headless: true}
`, map[string]string{"1": "info"}[replicas]+map[string]string{"2": "debug"}[replicas]),
		"kubernetes/apps/web/app/helmrelease.yaml": fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts}
spec: {url: %q, interval: 1h}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  interval: 1h
  chart:
    spec: {chart: webapp, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  values:
    replicas: ${REPLICAS}
    password: "${ADMIN_PASSWORD}"
    headless: true
`, repoURL),
	}
}

// TestDiffTreePredictsOperatorLayout is diff tree's acceptance test on a repository laid out for
// the Flux Operator (operatorFiles), against the real kustomize-controller, source-controller and
// helm-controller. The cluster is bootstrapped as such a repository's bootstrap does it: the
// decryption key, the cluster's substitution variables (decrypted) and the FluxInstance's
// GitRepository and cluster-apps Kustomization applied. The pull request moves the replicas (the
// ConfigMap) and the password (the encrypted Secret). The preview (no cluster) builds web in
// cluster-apps' context, with the variables cluster-apps applies: with the key, its rows are
// exactly the fields helm-controller changes once main, then main fast-forwarded to the pull
// request, are reconciled (web's Kustomization reconciled again after cluster-apps applied the
// head's variables, as its next interval would), no Secret value shown; without the key, the
// password is named as unmeasured (exit 3), the replicas still shown.
func TestDiffTreePredictsOperatorLayout(t *testing.T) {
	t.Parallel() // its own namespace, repository and Helm homes
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	charts := chartRepository(t, h, filepath.Join(repoRoot, "testdata/charts/webapp"))

	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "age.agekey")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	repo := filepath.Join(root, "fleet")
	gitSrv := gitServer(t, root)
	basePassword, headPassword := hrSecretMarker+"-operator-base", hrSecretMarker+"-operator-head"
	base := operatorFiles(ns, charts, "1", sopsSecret(t, ns, "cluster-secrets", "ADMIN_PASSWORD", basePassword, id.Recipient()))
	head := operatorFiles(ns, charts, "2", sopsSecret(t, ns, "cluster-secrets", "ADMIN_PASSWORD", headPassword, id.Recipient()))
	git := pullRequest(t, repo, base, head)

	// previewIn previews main against pr in dir, with the kubeconfig given (one of no cluster
	// when ""); preview in the repository, with no cluster.
	previewIn := func(dir, kubeconfig string, args ...string) (int, string, string) {
		if kubeconfig == "" {
			kubeconfig = filepath.Join(t.TempDir(), "none")
		}
		cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), append([]string{"diff", "tree", "--base", "main", "--head", "pr",
			"--kube-version", "v1.34.2", "--chart-cache", filepath.Join(t.TempDir(), "cache"), "-o", "json"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "KUBECONFIG="+kubeconfig, "SOPS_AGE_KEY=", "SOPS_AGE_KEY_FILE=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stdout.String()+stderr.String(), hrSecretMarker) {
			t.Errorf("diff tree %v prints a value from a Secret:\n%s%s", args, stdout.String(), stderr.String())
		}
		return code, stdout.String(), stderr.String()
	}
	preview := func(args ...string) (int, string, string) { return previewIn(repo, "", args...) }
	code, out, errOut := preview("--sops-age-key-file", keyFile)
	if code != 2 {
		t.Fatalf("diff tree with the key: exit %d, want 2\n%s%s", code, out, errOut)
	}
	var doc treeJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.HelmReleases) != 1 || doc.HelmReleases[0].HelmRelease != ns+"/web" || doc.HelmReleases[0].Report == nil || doc.HelmReleases[0].Next != "upgrade" {
		t.Fatalf("want web alone, upgraded, in cluster-apps' context:\n%s%s", out, errOut)
	}
	predicted := rowsOf(doc.HelmReleases[0].Report)
	pinnedNote := "ConfigMap " + ns + "/pinned-values (Kustomization " + ns + "/web): it is marked kustomize.toolkit.fluxcd.io/ssa: IfNotPresent and the cluster holds it"
	if !strings.Contains(strings.Join(doc.Notes, "\n"), pinnedNote) {
		t.Errorf("notes %q: want %q", doc.Notes, pinnedNote)
	}

	code, out, errOut = preview()
	want := "could not measure HelmRelease " + ns + "/web: ${ADMIN_PASSWORD} (SOPS-encrypted Secret " + ns + "/cluster-secrets, not decrypted) changed"
	if code != 3 || !strings.Contains(errOut, want) || !strings.Contains(out, "spec.replicas") {
		t.Errorf("diff tree without the key: exit %d, want 3, %q, and the replicas' row\n%s%s", code, want, out, errOut)
	}

	// The bootstrap: the decryption key and the cluster's variables (decrypted), then what the
	// FluxInstance makes.
	for _, o := range []any{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns}, StringData: map[string]string{"age.agekey": id.String()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-secrets", Namespace: ns}, StringData: map[string]string{"ADMIN_PASSWORD": basePassword}},
	} {
		if _, err := cluster.Kube.CoreV1().Secrets(ns).Create(context.Background(), o.(*corev1.Secret), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-settings", Namespace: ns},
		Data: map[string]string{"REPLICAS": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: %s}
spec: {url: %q, interval: 1h, ref: {branch: main}}
`, ns, gitSrv.URL+"/fleet"))
	applyYAML(t, base["kubernetes/flux/cluster/ks.yaml"])
	waitKustomization(t, ns, "cluster-apps", "")
	waitKustomization(t, ns, "web", "")
	waitTreeRevision(t, ns, "web", 1)
	waitTreeRevision(t, ns, "pinned", 1)
	before := storedRelease(t, ns, "web").Manifest

	// The cluster's variables outside the tree (a repository that leaves them to the
	// bootstrap): with --live they are read from the cluster, as kustomize-controller reads
	// them; without, named as missing.
	outside := map[string]map[string]string{}
	for i, files := range []map[string]string{base, head} {
		f := map[string]string{}
		for k, v := range files {
			f[k] = v
		}
		f["kubernetes/apps/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [web/ks.yaml]\n"
		f["kubernetes/apps/web/app/helmrelease.yaml"] = strings.Replace(f["kubernetes/apps/web/app/helmrelease.yaml"], "headless: true", fmt.Sprintf("headless: %v", i == 0), 1)
		outside[[]string{"base", "head"}[i]] = f
	}
	outsideRepo := filepath.Join(root, "outside")
	pullRequest(t, outsideRepo, outside["base"], outside["head"])
	for _, live := range []bool{true, false} {
		var args []string
		kubeconfig := ""
		if live {
			args, kubeconfig = []string{"--live"}, cluster.Kubeconfig
		}
		code, out, errOut := previewIn(outsideRepo, kubeconfig, args...)
		text := out + errOut
		missing := "postBuild.substituteFrom ConfigMap " + ns + "/cluster-settings is not in the tree"
		switch {
		case live && (code != 2 || strings.Contains(text, "${REPLICAS}") || strings.Contains(text, "not in the tree")):
			t.Errorf("--live, the variables in the cluster only: exit %d, want 2, substituted from the cluster\n%s", code, text)
		case !live && (code != 3 || !strings.Contains(text, missing)):
			t.Errorf("without --live: exit %d, want 3 and %q\n%s", code, missing, text)
		}
	}

	git("merge", "-q", "--ff-only", "pr")
	rev := headRevision(t, repo)
	requestReconcile(t, gitRepositories, ns, "fleet")
	waitKustomization(t, ns, "cluster-apps", rev)
	// web's Kustomization may have been built with the base's variables (the cluster's, before
	// cluster-apps applied the head's); its next reconcile reads the head's.
	token := requestReconcile(t, kustomizations, ns, "web")
	testenv.Eventually(t, 3*time.Minute, "Kustomization "+ns+"/web handled "+token, func() (bool, string) {
		k, err := cluster.Dynamic.Resource(kustomizations).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		handled, _, _ := unstructured.NestedString(k.Object, "status", "lastHandledReconcileAt")
		applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
		return handled == token && condition(k, "Ready") == "True" && strings.HasSuffix(applied, rev), fmt.Sprintf("handled %q, applied %q, Ready=%s", handled, applied, condition(k, "Ready"))
	})
	waitObserved(t, ns, "web")
	// kustomize-controller left pinned's values as they were: nothing to upgrade, as predicted.
	if cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "pinned-values", metav1.GetOptions{}); err != nil || cm.Data["values.yaml"] != "inlineLogLevel: info" {
		t.Errorf("ConfigMap pinned-values after the merge: %v %v, want the base's log level kept (ssa: IfNotPresent)", cm.Data, err)
	}
	if v := storedRelease(t, ns, "pinned").Version; v != 1 {
		t.Errorf("pinned: revision %d after the merge, want 1 (its values were not applied)", v)
	}
	happened := manifestChanges(t, before, storedRelease(t, ns, "web").Manifest, ns)
	if strings.Join(predicted, "\n") != strings.Join(happened, "\n") {
		t.Errorf("web: predicted rows\n  %s\nthe controllers changed\n  %s", strings.Join(predicted, "\n  "), strings.Join(happened, "\n  "))
	}
	if len(happened) < 2 {
		t.Errorf("web: the controllers changed %v, want the replicas and the password: the test proves too little", happened)
	}
	t.Logf("web: %d rows predicted and seen: %s", len(happened), strings.Join(happened, "; "))
}
