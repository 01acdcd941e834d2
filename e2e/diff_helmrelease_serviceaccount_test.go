package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestDiffHelmReleaseServiceAccount: a HelmRelease with spec.serviceAccountName, installed by
// the real helm-controller (which impersonates the account), whose chart looks up a ConfigMap
// in another namespace that the account may read. diff helmrelease answers the lookup as the
// account when the user may impersonate it, so a user who may not read that ConfigMap gets the
// controller's render; a user who may not impersonate gets the render as themself, with a note
// (or, when they may not read it either, an error saying as whom); and when the account loses
// its access, diff fails on the lookup as helm-controller's forced reconcile then does, naming
// the same account and object.
func TestDiffHelmReleaseServiceAccount(t *testing.T) {
	ns, other := cluster.Namespace(t), cluster.Namespace(t)
	ctx := context.Background()
	kc := cluster.Kube
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: kind, Name: name}
	}
	account := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}
	}
	must(kc.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"colour": "blue"}}, metav1.CreateOptions{}))
	// deployer: what helm-controller acts as; all of ns, and may read the shared settings.
	must(kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}))
	// (Not the ClusterRole admin: its rules are aggregated by kube-controller-manager, which
	// the test environment does not run.)
	must(kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{}))
	must(kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef: roleRef("Role", "deployer"), Subjects: account("deployer")}, metav1.CreateOptions{}))
	must(kc.RbacV1().Roles(other).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "settings-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}))
	settingsBinding := func(name, sa string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: roleRef("Role", "settings-reader"), Subjects: account(sa)}
	}
	must(kc.RbacV1().RoleBindings(other).Create(ctx, settingsBinding("deployer", "deployer"), metav1.CreateOptions{}))

	chartHelmReleaseWith(t, ns, "sharedconfig", fmt.Sprintf("  serviceAccountName: deployer\n  values: {settingsNamespace: %s}", other))
	deployer := "system:serviceaccount:" + ns + ":deployer"
	seen, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "web-seen", metav1.GetOptions{})
	if err != nil || seen.Data["colour"] != "blue" {
		t.Fatalf("helm-controller's install, as %s: web-seen %v (%v), want colour blue", deployer, seen.Data, err)
	}

	t.Run("impersonated", func(t *testing.T) {
		table, code := hrDiff(t, "web", "-n", ns)
		if code != 0 || !strings.Contains(table, "note: lookup answered as "+deployer+", impersonated as helm-controller does") {
			t.Errorf("as the cluster's admin: exit %d, want 0 and the lookup answered as %s\n%s", code, deployer, table)
		}
		out, code := hrDiff(t, "web", "-n", ns, "-o", "json")
		var rep struct {
			Lookup *struct {
				Account      string `json:"account"`
				Impersonated bool   `json:"impersonated"`
			} `json:"lookup"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Lookup == nil || rep.Lookup.Account != deployer || !rep.Lookup.Impersonated {
			t.Errorf("JSON: exit %d, lookup %+v (%v), want account %s impersonated\n%s", code, rep.Lookup, err, deployer, out)
		}
	})

	// viewer: a user who may read ns, but not the shared settings, and not yet impersonate.
	must(kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}))
	must(kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}))
	must(kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef: roleRef("Role", "reader"), Subjects: account("viewer")}, metav1.CreateOptions{}))
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "viewer", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	viewer := "system:serviceaccount:" + ns + ":viewer"
	asViewer := tokenKubeconfig(t, cluster.Config.Host, tok.Status.Token)
	viewerDiff := func(args ...string) (string, int) {
		out, errOut, code := diffBinary(t, append([]string{"helmrelease", "web", "-n", ns, "--kubeconfig", asViewer}, args...)...)
		return out + errOut, code
	}
	// RBAC changes reach the API server's authorizer through its informers: wait for each.
	eventually := func(t *testing.T, what string, f func() (bool, string)) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, f)
	}

	t.Run("may not impersonate", func(t *testing.T) {
		eventually(t, "as a viewer who may not impersonate nor read the settings: exit 3 naming as whom", func() (bool, string) {
			out, code := viewerDiff()
			return code == 3 && strings.Contains(out, "as you, not as "+deployer) &&
				strings.Contains(out, "you may not impersonate serviceaccount "+ns+"/deployer") &&
				strings.Contains(out, `configmaps "settings" is forbidden: User "`+viewer+`"`), fmt.Sprintf("exit %d\n%s", code, out)
		})
	})

	t.Run("may impersonate", func(t *testing.T) {
		must(kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-deployer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"deployer"}, Verbs: []string{"impersonate"}}}}, metav1.CreateOptions{}))
		must(kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-deployer"},
			RoleRef: roleRef("Role", "impersonate-deployer"), Subjects: account("viewer")}, metav1.CreateOptions{}))
		eventually(t, "as a viewer who may impersonate the account: the controller's render, 0 divergences", func() (bool, string) {
			out, code := viewerDiff()
			return code == 0 && strings.Contains(out, "0 divergences") && strings.Contains(out, "lookup answered as "+deployer+", impersonated"), fmt.Sprintf("exit %d\n%s", code, out)
		})
		if err := kc.RbacV1().RoleBindings(ns).Delete(ctx, "impersonate-deployer", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("as you", func(t *testing.T) {
		must(kc.RbacV1().RoleBindings(other).Create(ctx, settingsBinding("viewer", "viewer"), metav1.CreateOptions{}))
		eventually(t, "as a viewer who may read the settings but not impersonate: rendered as the viewer, with a note", func() (bool, string) {
			out, code := viewerDiff()
			return code == 0 && strings.Contains(out, "note: lookup answered as you, not as "+deployer+" as helm-controller would: you may not impersonate serviceaccount "+ns+"/deployer"),
				fmt.Sprintf("exit %d\n%s", code, out)
		})
		out, code := viewerDiff("-o", "markdown")
		if code != 0 || !strings.Contains(out, "- note: lookup answered as you, not as "+deployer) {
			t.Errorf("markdown: exit %d, want the note\n%s", code, out)
		}
	})

	t.Run("the account loses its access", func(t *testing.T) {
		if err := kc.RbacV1().RoleBindings(other).Delete(ctx, "deployer", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		refusal := `configmaps "settings" is forbidden: User "` + deployer + `" cannot get resource "configmaps" in API group "" in the namespace "` + other + `"`
		eventually(t, "diff helmrelease fails on the lookup as the account", func() (bool, string) {
			out, code := hrDiff(t, "web", "-n", ns)
			return code == 3 && strings.Contains(out, "(as "+deployer+", as helm-controller would)") && strings.Contains(out, refusal), fmt.Sprintf("exit %d\n%s", code, out)
		})
		requestForce(t, ns)
		eventually(t, "helm-controller's forced reconcile fails on the same lookup", func() (bool, string) {
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			msg := conditionMessage(hr, "Ready")
			return condition(hr, "Ready") == "False" && strings.Contains(msg, refusal), msg
		})
	})
}
