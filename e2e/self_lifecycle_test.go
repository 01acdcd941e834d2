package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var ociRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}

// packageSelfApp packages testdata/charts/selfapp as version with the given edition default.
func packageSelfApp(t *testing.T, h *helmCLI, version, edition string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "selfapp")
	src := filepath.Join(repoRoot, "testdata/charts/selfapp")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/configmap.yaml", "templates/deployment.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(data), "version: 1.0.0", "version: "+version, 1)
		s = strings.Replace(s, `edition: "1.0"`, `edition: "`+edition+`"`, 1)
		os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644)
	}
	out := t.TempDir()
	h.run(t, false, nil, "package", dir, "-d", out)
	return filepath.Join(out, "selfapp-"+version+".tgz")
}

func selfBinary(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	out, errOut, code := helmDrift("", append([]string{"self"}, args...)...)
	if code != 0 {
		return out, errOut, fmt.Errorf("helm-drift self %s: exit %d", strings.Join(args, " "), code)
	}
	return out, errOut, nil
}

// TestSelfManagement is the acceptance test of render --self and the suspend bracket against
// the real helm-controller and source-controller.
func TestSelfManagement(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	repo := "oci://" + cluster.Registry + "/self-" + ns
	push := func(tgz string) { h.run(t, false, nil, "push", tgz, repo, "--plain-http") }
	v100 := packageSelfApp(t, h, "1.0.0", "1.0")
	push(v100)

	renderArgs := func(extra ...string) []string {
		args := []string{"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
		return append(args, postRendererArgs(append([]string{"--self", "--release=app", "--namespace=" + ns,
			"--self-repository=" + repo, "--self-insecure", "--kubeconfig=" + cluster.Kubeconfig, selfSharedIdentity}, extra...)...)...)
	}
	h.run(t, false, nil, append([]string{"install", "app", v100, "-n", ns, "--set", "greeting=custom"}, renderArgs("--install")...)...)

	hrs := cluster.Dynamic.Resource(helmReleases).Namespace(ns)
	hr, err := hrs.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the self HelmRelease was not installed: %v", err)
	}
	if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); !s {
		t.Fatalf("the self HelmRelease is not suspended after an install")
	}
	if _, err := cluster.Dynamic.Resource(ociRepositories).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Fatalf("the self OCIRepository was not installed: %v", err)
	}

	start := time.Now()
	out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil {
		t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
	}
	secret, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "app-values", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(secret.Data["values.yaml"]); got != "greeting: custom\n" {
		t.Errorf("values Secret holds %q, want only the user-supplied values", got)
	}
	if secret.Labels["reconcile.fluxcd.io/watch"] != "Enabled" {
		t.Errorf("values Secret lacks the watch label: %v", secret.Labels)
	}
	waitRevision(t, ns, 2, "helm-controller adopts the CLI release")
	t.Logf("adoption: %.1fs from resume to helm-controller's revision 2", time.Since(start).Seconds())
	checkConfig(t, ns, "custom", "1.0")

	// A second resume changes nothing.
	out, _, err = selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "nothing to do") {
		t.Errorf("second resume: %v\n%s", err, out)
	}

	// 1.1.0 inside the range: applied without any helm upgrade, the user's values intact.
	v110 := packageSelfApp(t, h, "1.1.0", "1.1")
	push(v110)
	start = time.Now()
	requestReconcile(t, ociRepositories, ns, "app")
	waitConfig(t, ns, "custom", "1.1")
	t.Logf("roll-forward: %.1fs from a requested OCIRepository reconcile to 1.1.0 applied", time.Since(start).Seconds())

	// 2.0.0 outside the range: not applied.
	push(packageSelfApp(t, h, "2.0.0", "2.0"))
	token := requestReconcile(t, ociRepositories, ns, "app")
	testenv.Eventually(t, time.Minute, "source-controller handles the reconcile", func() (bool, string) {
		o, err := cluster.Dynamic.Resource(ociRepositories).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		h, _, _ := unstructured.NestedString(o.Object, "status", "lastHandledReconcileAt")
		return h == token, "lastHandledReconcileAt=" + h
	})
	time.Sleep(3 * time.Second)
	checkConfig(t, ns, "custom", "1.1")

	// The values Secret rewritten: applied.
	patch := `{"stringData":{"values.yaml":"greeting: rewritten\n"}}`
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Patch(ctx, "app-values", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, ns, "rewritten", "1.1")

	// A plain helm upgrade with the post-renderer does not re-suspend the HelmRelease.
	h.run(t, false, nil, append([]string{"upgrade", "app", v110, "-n", ns, "--set", "greeting=rewritten"}, renderArgs()...)...)
	hr, err = hrs.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); s {
		t.Errorf("helm upgrade re-suspended the HelmRelease")
	}
	// The CLI wrote a revision while helm-controller is active: status warns of two writers.
	status, _, err := selfBinary(t, "status", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(status, "writer:    BOTH: warning") {
		t.Errorf("self status: %v\n%s", err, status)
	}
	t.Logf("self status:\n%s", status)

	// Hand back: the CLI owns the release again, and helm upgrade works.
	if out, errOut, err := selfBinary(t, "handback", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
		t.Fatalf("handback: %v\n%s%s", err, out, errOut)
	}
	for _, gvr := range []schema.GroupVersionResource{helmReleases, ociRepositories} {
		if _, err := cluster.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s app still there after handback: %v", gvr.Resource, err)
		}
	}
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "app-values", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("values Secret still there after handback: %v", err)
	}
	checkConfig(t, ns, "rewritten", "1.1")
	h.run(t, false, nil, "upgrade", "app", v100, "-n", ns, "--set", "greeting=back")
	checkConfig(t, ns, "back", "1.0")

	// Uninstall (after handback, as documented) leaves nothing behind.
	h.run(t, false, nil, "uninstall", "app", "-n", ns)
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap app-config left after uninstall: %v", err)
	}
	secrets, _ := cluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	for _, s := range secrets.Items {
		t.Errorf("Secret %s left after uninstall", s.Name)
	}
}

func requestReconcile(t *testing.T, gvr schema.GroupVersionResource, ns, name string) string {
	t.Helper()
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	if _, err := cluster.Dynamic.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return token
}

func waitRevision(t *testing.T, ns string, want int64, what string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, what, func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(history) == 0 {
			return false, "no history; Ready=" + condition(hr, "Ready") + ": " + conditionMessage(hr, "Ready")
		}
		v, _, _ := unstructured.NestedInt64(history[0].(map[string]any), "version")
		return v == want && condition(hr, "Ready") == "True", fmt.Sprintf("revision %d, Ready=%s: %s", v, condition(hr, "Ready"), conditionMessage(hr, "Ready"))
	})
}

func configOf(ns string) (map[string]string, error) {
	cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cm.Data, nil
}

func checkConfig(t *testing.T, ns, greeting, edition string) {
	t.Helper()
	data, err := configOf(ns)
	if err != nil || data["greeting"] != greeting || data["edition"] != edition {
		t.Errorf("ConfigMap app-config = %v (%v), want greeting %q, edition %q", data, err, greeting, edition)
	}
}

func waitConfig(t *testing.T, ns, greeting, edition string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, "ConfigMap app-config reaches "+greeting+"/"+edition, func() (bool, string) {
		data, err := configOf(ns)
		if err != nil {
			return false, err.Error()
		}
		return data["greeting"] == greeting && data["edition"] == edition, fmt.Sprint(data)
	})
}

// TestSelfResumerHelm4: under Helm 4 (which hands hooks to post-renderers) --self-bracket job,
// and hooks (kept for compatibility), render the resumer as an ordinary object of the release,
// under MANIFEST: a hook would run while the revision is still pending. (No kubelet here: this
// checks Helm's own classification with a client-side dry run; TestSelfJobBracket runs it.)
func TestSelfResumerHelm4(t *testing.T) {
	h := newHelm(t, "helm4")
	h.installPlugins(t)
	for _, bracket := range []string{"job", "hooks"} {
		args := []string{"install", "platform", "testdata/charts/selfapp", "-n", "flux-system", "--dry-run=client", "--post-renderer", "drift-render"}
		args = append(args, postRendererArgs("--self", "--install", "--release=platform", "--namespace=flux-system",
			"--self-repository=oci://registry.example.internal/charts", "--kubeconfig=/nonexistent",
			"--self-bracket="+bracket, "--self-hook-image=registry.example.internal/tools/helm-drift:0.1.0")...)
		out, errOut := h.run(t, false, nil, args...)
		hooks, manifest, ok := strings.Cut(out, "\nMANIFEST:\n")
		if !ok {
			t.Fatalf("%s: no MANIFEST section:\n%s", bracket, out)
		}
		for _, want := range []string{"kind: Job", "name: platform-self-resumer", "kind: Role", "kind: RoleBinding", "kind: ServiceAccount", "- --timeout",
			"kind: HelmRelease", "kind: OCIRepository", "suspend: true"} {
			if !strings.Contains(manifest, want) {
				t.Errorf("%s: MANIFEST lacks %q", bracket, want)
			}
		}
		if strings.Contains(hooks, "platform-self-resumer") {
			t.Errorf("%s: the resumer is a hook:\n%s", bracket, hooks)
		}
		if bracket == "hooks" && !strings.Contains(errOut, "rendered as the detached resumer Job") {
			t.Errorf("hooks: stderr does not say it is rendered as job:\n%s", errOut)
		}
	}
}
