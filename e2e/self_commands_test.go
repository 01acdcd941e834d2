package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selfSharedIdentity: in the test environment helm-controller and the Helm CLI both run as the
// admin user, so tests of the bracket that are not about the CLI guard name that user as the
// writer the guard lets through (TestSelfGuard tells the two apart with a ServiceAccount).
const selfSharedIdentity = "--self-controller-identity=admin"

// TestSelfNeedsTheNamespace: Helm 3 does not pass the release namespace to a post-renderer.
// helm install -n NS with render --self but without --namespace in the post-renderer args fails
// before anything is applied, naming the flag to add: no release, no self pair, no object.
func TestSelfNeedsTheNamespace(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	repo := "oci://" + cluster.Registry + "/selfns-" + ns
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	args := []string{"install", "app", tgz, "-n", ns, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--self-repository="+repo, "--self-insecure",
		"--kubeconfig="+cluster.Kubeconfig)...)
	_, errOut := h.run(t, true, nil, args...)
	if !strings.Contains(errOut, "the release namespace is not known for certain") || !strings.Contains(errOut, "--post-renderer-args --namespace=NS") {
		t.Errorf("helm install without --namespace for the post-renderer: stderr does not name the fix:\n%s", errOut)
	}
	ctx := context.Background()
	if l, _ := h.run(t, false, nil, "list", "-a", "-q", "-n", ns); strings.TrimSpace(l) != "" {
		t.Errorf("a release was recorded: %q", l)
	}
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err == nil {
		t.Errorf("a self HelmRelease app exists in %s", ns)
	}
	if cms, err := cluster.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=Helm"}); err != nil || len(cms.Items) > 0 {
		t.Errorf("objects of the chart were applied in %s (%v)", ns, err)
	}
}

// TestSelfHooksRefusedUnderHelm3: Helm 3 never hands hooks to a post-renderer; render
// --self-bracket hooks refuses a stream that did not come through Helm 4, before anything is
// applied, and names --self-bracket job, which works under both.
func TestSelfHooksRefusedUnderHelm3(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	repo := "oci://" + cluster.Registry + "/selfhooks-" + ns
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	args := []string{"install", "app", tgz, "-n", ns, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--self-bracket=hooks", "--self-hook-image=registry.example.internal/helm-drift:test", "--kubeconfig="+cluster.Kubeconfig)...)
	_, errOut := h.run(t, true, nil, args...)
	if !strings.Contains(errOut, "--self-bracket hooks: Helm 3 never hands hooks to a post-renderer") || !strings.Contains(errOut, "use --self-bracket job") {
		t.Errorf("helm 3 install with --self-bracket hooks: stderr does not say why and what to use:\n%s", errOut)
	}
	if l, _ := h.run(t, false, nil, "list", "-a", "-q", "-n", ns); strings.TrimSpace(l) != "" {
		t.Errorf("a release was recorded: %q", l)
	}
	if jobs, err := cluster.Kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(jobs.Items) > 0 {
		t.Errorf("a Job was created (%v)", err)
	}
}

// selfAdopted installs selfapp as release app in ns with --self (Helm 3, the shared identity
// as the guard's writer), ends the bracket with "self resume" and waits until helm-controller
// has adopted it (revision 2).
func selfAdopted(t *testing.T, h *helmCLI, ns string) {
	t.Helper()
	repo := "oci://" + cluster.Registry + "/selfapp-" + ns
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	h.run(t, false, nil, "push", tgz, repo, "--plain-http")
	args := []string{"install", "app", tgz, "-n", ns, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--kubeconfig="+cluster.Kubeconfig, selfSharedIdentity)...)
	h.run(t, false, nil, args...)
	if out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
		t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
	}
	waitRevision(t, ns, 2, "helm-controller adopts the CLI release")
}

// TestSelfStatusReleaseGone: "helm uninstall" leaves the pair (helm.sh/resource-policy: keep);
// with the HelmRelease active, "self status" warns that helm-controller will install the
// release again and names the hand-back; "self handback" then removes the pair and says the
// release stays uninstalled.
func TestSelfStatusReleaseGone(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	selfAdopted(t, h, ns)

	h.run(t, false, nil, "uninstall", "app", "-n", ns)
	status, _, err := selfBinary(t, "status", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(status, "helm-controller will install it again") || !strings.Contains(status, "helm drift self handback app -n "+ns) {
		t.Errorf("self status after helm uninstall: %v\n%s", err, status)
	}
	out, errOut, err := selfBinary(t, "handback", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "is not installed, and nothing will install it again") {
		t.Errorf("self handback of an uninstalled release: %v\n%s%s", err, out, errOut)
	}
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err == nil {
		t.Errorf("HelmRelease app still there after handback")
	}
	if l, _ := h.run(t, false, nil, "list", "-a", "-q", "-n", ns); strings.TrimSpace(l) != "" {
		t.Errorf("release recorded again: %q", l)
	}
}

// TestSelfUninstall: "helm drift self uninstall" removes the pair, the values Secret and the
// guard, then uninstalls the release: nothing is left, and nothing installs it again.
func TestSelfUninstall(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	selfAdopted(t, h, ns)

	out, errOut, err := selfBinary(t, "uninstall", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "uninstalled") || !strings.Contains(out, "nothing will install it again") {
		t.Fatalf("self uninstall: %v\n%s%s", err, out, errOut)
	}
	time.Sleep(3 * time.Second) // a reconcile window: nothing may come back
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err == nil {
		t.Errorf("HelmRelease app left")
	}
	if _, err := cluster.Dynamic.Resource(ociRepositories).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err == nil {
		t.Errorf("OCIRepository app left")
	}
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "helm-drift-self."+ns+".app", metav1.GetOptions{}); err == nil {
		t.Errorf("the CLI guard left")
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{}); err == nil {
		t.Errorf("ConfigMap app-config left")
	}
	if secrets, _ := cluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); len(secrets.Items) > 0 {
		for _, s := range secrets.Items {
			t.Errorf("Secret %s left", s.Name)
		}
	}
	// A release the CLI owns is not this command's: it says so and removes nothing.
	_, errOut, err = selfBinary(t, "uninstall", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err == nil || !strings.Contains(errOut, "app") {
		t.Errorf("self uninstall of a release that is gone: %v\n%s", err, errOut)
	}
}
