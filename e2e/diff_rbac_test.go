package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestDiffLeastPrivilege: with a ServiceAccount that may only get and list (the RBAC the README
// gives), --normalize offline measures the zoo release with no false positive; auto falls back to
// offline per kind and says so; server names the permission it lacks (exit 3); and a kind it
// may not list is "could not measure", never clean.
func TestDiffLeastPrivilege(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	kc := cluster.Kube
	h.run(t, false, nil, "install", "zoo", "testdata/charts/zoo", "-n", ns)

	resources := []string{"configmaps", "secrets", "services", "serviceaccounts", "persistentvolumeclaims", "resourcequotas", "limitranges"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: resources, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "networkpolicies"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"zoo.example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}},
	}}
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = kc.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	mustCreate(err)
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}
	_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}, Subjects: subject}, metav1.CreateOptions{})
	mustCreate(err)
	// The CRDs' schemas give the custom resources' defaults offline.
	_, err = kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-crd-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"get", "list"}},
		}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-crd-reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ns + "-crd-reader"}, Subjects: subject}, metav1.CreateOptions{})
	mustCreate(err)
	t.Cleanup(func() {
		kc.RbacV1().ClusterRoleBindings().Delete(context.Background(), ns+"-crd-reader", metav1.DeleteOptions{})
		kc.RbacV1().ClusterRoles().Delete(context.Background(), ns+"-crd-reader", metav1.DeleteOptions{})
	})
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "reader", &authv1.TokenRequest{}, metav1.CreateOptions{})
	mustCreate(err)
	kubeconfig := tokenKubeconfig(t, cluster.Config.Host, tok.Status.Token)
	run := func(args ...string) (string, string, int) {
		return diffBinary(t, append([]string{"release", "zoo", "-n", ns, "--kubeconfig", kubeconfig}, args...)...)
	}

	out, errOut, code := run("--normalize", "offline")
	if code != 0 || !strings.Contains(out, "0 divergences across") {
		t.Errorf("offline with get/list only: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run()
	if code != 0 || !strings.Contains(out, "0 divergences across") || !strings.Contains(out, "offline (dry-run forbidden: no create on deployments.apps)") {
		t.Errorf("auto with get/list only: exit %d, want 0 with a note per kind\n%s%s", code, out, errOut)
	}
	_, errOut, code = run("--normalize", "server")
	if code != 3 || !strings.Contains(errOut, "forbidden: needs create") || !strings.Contains(errOut, "Kubernetes authorises a dry-run like the real write") {
		t.Errorf("server with get/list only: exit %d, want 3 naming the permission\n%s", code, errOut)
	}

	// A kind it may not list: could not measure, the permission named.
	role.Rules[0].Resources = []string{"configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims", "resourcequotas", "limitranges"}
	_, err = kc.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
	mustCreate(err)
	testenv.Eventually(t, 30*time.Second, "the Role update to take effect", func() (bool, string) {
		out, errOut, code = run("--normalize", "offline")
		return code == 3, errOut
	})
	if !strings.Contains(errOut, "could not measure") || !strings.Contains(errOut, "needs list on services in namespace "+ns) {
		t.Errorf("a kind it may not list: exit %d\n%s", code, errOut)
	}
	// It fails those objects, not the run: the zoo's five Services are reported unmeasured, the
	// rest measured.
	if !strings.Contains(out, "COULD NOT MEASURE  Service "+ns+"/zoo-web: forbidden: needs list on services") ||
		!strings.Contains(out, "could not measure 5 of ") || !strings.Contains(out, "in the others, 0 divergences across") {
		t.Errorf("a kind it may not list: the other objects are not reported:\n%s", out)
	}
}
