package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deployerRBAC creates the ServiceAccount helm-controller impersonates for the self
// HelmRelease, with what writing this chart's release needs: its objects and storage Secrets in
// the namespace, and reading the kept objects of the last manifest (the pair and the guard).
func deployerRBAC(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	kube := cluster.Kube
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{"helm.toolkit.fluxcd.io", "source.toolkit.fluxcd.io"}, Resources: []string{"helmreleases", "ocirepositories"}, Verbs: []string{"get", "list"}},
	}}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := ns + "-" + sa
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: []string{"get", "list"}},
	}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// storageRevisions counts the release's Helm storage Secrets.
func storageRevisions(t *testing.T, ns, release string) int {
	t.Helper()
	l, err := cluster.Kube.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestSelfGuard: with the CLI guard (on by default with --self) and the self HelmRelease
// written as its own ServiceAccount, once helm-controller has adopted the release a plain
// helm upgrade and a helm rollback by the CLI user fail with the guard's message (naming the
// values Secret and the hand-back) and write no revision, while helm-controller's own upgrade
// to a chart version pushed in range passes; after "self handback" the guard is gone and the
// CLI upgrades again.
func TestSelfGuard(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	deployerRBAC(t, ns, "app-deployer")
	repo := "oci://" + cluster.Registry + "/selfguard-" + ns
	push := func(tgz string) { h.run(t, false, nil, "push", tgz, repo, "--plain-http") }
	v100 := packageSelfApp(t, h, "1.0.0", "1.0")
	push(v100)
	args := []string{"install", "app", v100, "-n", ns, "--set", "greeting=custom", "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--self-service-account=app-deployer", "--kubeconfig="+cluster.Kubeconfig)...)
	h.run(t, false, nil, args...)
	guard := "helm-drift-self." + ns + ".app"
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); err != nil {
		t.Fatalf("the guard policy %s was not installed: %v", guard, err)
	}
	if out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
		t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
	}
	waitRevision(t, ns, 2, "helm-controller, as app-deployer, adopts the release through the guard")

	before := storageRevisions(t, ns, "app")
	for _, cli := range [][]string{
		{"upgrade", "app", v100, "-n", ns, "--set", "greeting=from-the-cli"},
		{"rollback", "app", "1", "-n", ns},
	} {
		start := time.Now()
		_, errOut := h.run(t, true, nil, cli...)
		t.Logf("helm %s refused after %.1fs", cli[0], time.Since(start).Seconds())
		for _, want := range []string{"ValidatingAdmissionPolicy", "is managed by Flux", "Secret " + ns + "/app-values", "helm drift self handback app -n " + ns} {
			if !strings.Contains(errOut, want) {
				t.Errorf("helm %s: the refusal lacks %q:\n%s", cli[0], want, errOut)
			}
		}
		if got := storageRevisions(t, ns, "app"); got != before {
			t.Errorf("helm %s: %d storage Secrets, want %d (no revision written)", cli[0], got, before)
		}
	}
	checkConfig(t, ns, "custom", "1.0")

	// helm-controller's own upgrade passes the guard.
	push(packageSelfApp(t, h, "1.1.0", "1.1"))
	requestReconcile(t, ociRepositories, ns, "app")
	waitConfig(t, ns, "custom", "1.1")

	// Hand back: the guard goes with the pair, and the CLI writes the release again.
	out, errOut, err := selfBinary(t, "handback", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "the CLI guard removed") {
		t.Fatalf("handback: %v\n%s%s", err, out, errOut)
	}
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the guard policy is still there after handback: %v", err)
	}
	h.run(t, false, nil, "upgrade", "app", v100, "-n", ns, "--set", "greeting=back")
	checkConfig(t, ns, "back", "1.0")
	h.run(t, false, nil, "uninstall", "app", "-n", ns)
}

// postRendererHelm is a helm CLI on the test environment and the --post-renderer arguments
// that run helm-drift render under it: the binary's path for Helm 3, the drift-render plugin
// (installed here) for Helm 4.
func postRendererHelm(t *testing.T, helmName string) (*helmCLI, []string) {
	t.Helper()
	h := clusterHelm(t, helmName)
	if helmName == "helm4" {
		h.installPlugins(t)
		return h, []string{"--post-renderer", "drift-render"}
	}
	return h, []string{"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
}

// TestSelfMoveExisting: a release installed by the CLI without the post-renderer is moved into
// self-management by a later "helm upgrade ... --self" (the HelmRelease does not exist yet, so
// it is rendered suspended), under Helm 3 and Helm 4: resume hands it to helm-controller in one
// more revision with the values intact, and from then on the guard refuses the CLI's upgrades.
func TestSelfMoveExisting(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h, postRenderer := postRendererHelm(t, helmName)
			ns := cluster.Namespace(t)
			ctx := context.Background()
			deployerRBAC(t, ns, "app-deployer")
			repo := "oci://" + cluster.Registry + "/selfmove-" + ns
			v100 := packageSelfApp(t, h, "1.0.0", "1.0")
			h.run(t, false, nil, "push", v100, repo, "--plain-http")
			h.run(t, false, nil, "install", "app", v100, "-n", ns, "--set", "greeting=custom")

			args := append([]string{"upgrade", "app", v100, "-n", ns, "--reuse-values"}, postRenderer...)
			args = append(args, postRendererArgs("--self", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
				"--self-service-account=app-deployer", "--kubeconfig="+cluster.Kubeconfig)...)
			h.run(t, false, nil, args...)
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("no self HelmRelease after helm upgrade --self: %v", err)
			}
			if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); !s {
				t.Fatalf("the self HelmRelease brought in by an upgrade is not suspended")
			}
			if out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
				t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
			}
			waitRevision(t, ns, 3, "helm-controller adopts the moved release (revisions: install, upgrade --self, adoption)")
			checkConfig(t, ns, "custom", "1.0")
			before := storageRevisions(t, ns, "app")
			_, errOut := h.run(t, true, nil, "upgrade", "app", v100, "-n", ns, "--set", "greeting=from-the-cli")
			if !strings.Contains(errOut, "helm drift self handback app -n "+ns) {
				t.Errorf("the CLI upgrade after the move: not refused by the guard:\n%s", errOut)
			}
			if got := storageRevisions(t, ns, "app"); got != before {
				t.Errorf("%d storage Secrets after the refused upgrade, want %d", got, before)
			}
			// Hand back; the CLI writes the release again. Under Helm 4 (server-side apply) the
			// fields helm-controller applied are co-owned by its field manager: the first CLI
			// upgrade that changes one conflicts, and --force-conflicts takes them over.
			if out, errOut, err := selfBinary(t, "handback", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
				t.Fatalf("handback: %v\n%s%s", err, out, errOut)
			}
			back := []string{"upgrade", "app", v100, "-n", ns, "--set", "greeting=back"}
			if helmName == "helm4" {
				if _, errOut := h.run(t, true, nil, back...); !strings.Contains(errOut, "conflict") {
					t.Errorf("helm 4: the first CLI upgrade after handback: want a field-manager conflict, got:\n%s", errOut)
				}
				back = append(back, "--force-conflicts")
			}
			h.run(t, false, nil, back...)
			checkConfig(t, ns, "back", "1.0")
			h.run(t, false, nil, "uninstall", "app", "-n", ns)
		})
	}
}

// TestSelfUninstallRefused: with the guard and the release adopted by helm-controller (written
// as its own ServiceAccount), a plain "helm uninstall" by the CLI user is refused before it
// deletes anything, under Helm 3 and Helm 4: Helm prints the guard's warning naming "helm drift
// self uninstall", the release stays deployed with all its revisions and objects, and deletes
// that are not the release's pass. "self uninstall" then leaves nothing, and after a reconcile
// window nothing is installed again.
func TestSelfUninstallRefused(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h, postRenderer := postRendererHelm(t, helmName)
			ns := cluster.Namespace(t)
			ctx := context.Background()
			kube := cluster.Kube
			deployerRBAC(t, ns, "app-deployer")
			repo := "oci://" + cluster.Registry + "/selfuninstall-" + ns
			v100 := packageSelfApp(t, h, "1.0.0", "1.0")
			h.run(t, false, nil, "push", v100, repo, "--plain-http")
			args := append([]string{"install", "app", v100, "-n", ns, "--set", "greeting=custom"}, postRenderer...)
			args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
				"--self-service-account=app-deployer", "--kubeconfig="+cluster.Kubeconfig)...)
			h.run(t, false, nil, args...)
			if out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil {
				t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
			}
			waitRevision(t, ns, 2, "helm-controller, as app-deployer, adopts the release")

			before := storageRevisions(t, ns, "app")
			_, errOut := h.run(t, true, nil, "uninstall", "app", "-n", ns)
			for _, want := range []string{"failed to delete release: app", "is managed by Flux", "helm drift self uninstall app -n " + ns} {
				if !strings.Contains(errOut, want) {
					t.Errorf("helm uninstall: the refusal lacks %q:\n%s", want, errOut)
				}
			}
			if got := storageRevisions(t, ns, "app"); got != before {
				t.Errorf("%d storage Secrets after the refused uninstall, want %d", got, before)
			}
			if st, _ := h.run(t, false, nil, "status", "app", "-n", ns); !strings.Contains(st, "STATUS: deployed") {
				t.Errorf("the release is not deployed after the refused uninstall:\n%s", st)
			}
			checkConfig(t, ns, "custom", "1.0")
			for _, kind := range []struct {
				gvr  schema.GroupVersionResource
				name string
			}{{helmReleases, "app"}, {ociRepositories, "app"}} {
				if _, err := cluster.Dynamic.Resource(kind.gvr).Namespace(ns).Get(ctx, kind.name, metav1.GetOptions{}); err != nil {
					t.Errorf("%s %s after the refused uninstall: %v", kind.gvr.Resource, kind.name, err)
				}
			}
			// What is not the release's is deleted as before, in the namespace and cluster-wide.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-the-release"}}
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete a ConfigMap that is not the release's: %v", err)
			}
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-not-the-release"}}
			if _, err := kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := kube.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete a ClusterRole that is not the release's: %v", err)
			}

			out, errOut, err := selfBinary(t, "uninstall", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
			if err != nil || !strings.Contains(out, "nothing will install it again") {
				t.Fatalf("self uninstall: %v\n%s%s", err, out, errOut)
			}
			time.Sleep(3 * time.Second) // a reconcile window: nothing may come back
			if n := storageRevisions(t, ns, "app"); n != 0 {
				t.Errorf("release recorded again: %d storage Secrets", n)
			}
			for _, gvr := range []schema.GroupVersionResource{helmReleases, ociRepositories} {
				if _, err := cluster.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("%s app left (%v)", gvr.Resource, err)
				}
			}
			if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "helm-drift-self."+ns+".app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the CLI guard left (%v)", err)
			}
			if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap app-config left (%v)", err)
			}
			if secrets, _ := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); len(secrets.Items) > 0 {
				for _, s := range secrets.Items {
					t.Errorf("Secret %s left", s.Name)
				}
			}
		})
	}
}
