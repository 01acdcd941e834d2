package e2e

import (
	"context"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOwnersClusterLeastPrivilege: `owners --cluster` works with a ServiceAccount that may only
// list the kinds the stream renders (the RBAC the README gives), and a kind it may not list is
// "could not check" (exit 3, the kind named), never clean.
func TestOwnersClusterLeastPrivilege(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	ns := cluster.Namespace(t)
	ctx := context.Background()
	kc := cluster.Kube
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "checker"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "list-configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "checker"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "list-configmaps"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "checker", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "checker", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := tokenKubeconfig(t, cluster.Config.Host, tok.Status.Token)
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	run := func(stream string) (string, string, int) {
		return helmDrift(stream, "owners", "--cluster", "--release=r", "-n", ns, "--kubeconfig", kubeconfig)
	}
	out, errOut, code := run("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\n")
	if code != 1 || !strings.Contains(out, "owned-by-another-release: ConfigMap "+ns+"/taken") {
		t.Errorf("list-only ServiceAccount: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n")
	if code != 3 || !strings.Contains(errOut, "could not check the cluster") || !strings.Contains(errOut, "services") || !strings.Contains(errOut, "forbidden") {
		t.Errorf("a kind it may not list: exit %d\n%s%s", code, out, errOut)
	}
}
