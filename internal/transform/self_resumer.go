package transform

import (
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

// hooks are the end of the bracket as Helm hooks: RBAC first (weight -5), then the Job.
// resumer renders the detached resumer: a Job in the manifest (not a hook: Helm does not wait
// for it, and it may run while the revision is still pending) that runs `helm drift self
// resume`, which waits until the revision is deployed, writes the values Secret and resumes
// the HelmRelease, and gives up without resuming after ResumerTimeout; with a ServiceAccount,
// Role and RoleBinding allowing exactly that. backoffLimit 0: a resumer that gave up is not
// retried into a late resume.
func (s *Self) resumer(secret string) []map[string]any {
	name := s.Release + "-self-resumer"
	timeout := s.ResumerTimeout
	if timeout == "" {
		timeout = "10m"
	}
	meta := func() map[string]any {
		return map[string]any{"name": name, "namespace": s.Namespace, "labels": map[string]any{selfmanaged.SelfLabel: "true", selfmanaged.ResumerLabel: s.Release}}
	}
	subjects := []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": s.Namespace}}
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta()},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(), "rules": resumerRules(secret, s.Release)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
			"subjects": subjects},
	}
	if s.Guard {
		// Arming the guard at the hand-over patches its policy and bindings, which are
		// cluster-scoped: exactly those three, by name.
		guard := selfmanaged.GuardName(s.Namespace, s.Release)
		crMeta := map[string]any{"name": guard + ".resumer", "labels": map[string]any{selfmanaged.SelfLabel: "true", selfmanaged.ResumerLabel: s.Release}}
		var bindings []any
		for _, b := range selfmanaged.GuardBindings(s.Namespace, s.Release) {
			bindings = append(bindings, b.Name)
		}
		objs = append(objs,
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": crMeta, "rules": []any{
				map[string]any{"apiGroups": []any{"admissionregistration.k8s.io"}, "resources": []any{"validatingadmissionpolicies"}, "resourceNames": []any{guard}, "verbs": []any{"get", "patch"}},
				map[string]any{"apiGroups": []any{"admissionregistration.k8s.io"}, "resources": []any{"validatingadmissionpolicybindings"}, "resourceNames": bindings, "verbs": []any{"get", "patch"}},
			}},
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": crMeta,
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": guard + ".resumer"},
				"subjects": subjects},
		)
	}
	return append(objs, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(), "spec": map[string]any{
		"backoffLimit": 0,
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{selfmanaged.ResumerLabel: s.Release}},
			"spec": map[string]any{
				"serviceAccountName": name,
				"restartPolicy":      "Never",
				"containers": []any{map[string]any{
					"name":    "resume",
					"image":   s.HookImage,
					"command": []any{"helm-drift", "self", "resume", s.Release, "--namespace", s.Namespace, "--timeout", timeout},
				}},
			},
		},
	}})
}

// resumerRules are what resuming needs: Helm's release storage (read the revision and its
// values), the values Secret, and the pair (marked keep at the hand-over; the HelmRelease
// resumed).
func resumerRules(secret, release string) []any {
	return []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get", "list"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "resourceNames": []any{secret}, "verbs": []any{"get", "patch", "create"}},
		map[string]any{"apiGroups": []any{flux.HelmReleaseGroup}, "resources": []any{flux.HelmReleases.Resource}, "resourceNames": []any{release}, "verbs": []any{"get", "patch"}},
		map[string]any{"apiGroups": []any{flux.SourceGroup}, "resources": []any{flux.OCIRepositories.Resource}, "resourceNames": []any{release}, "verbs": []any{"get", "patch"}},
	}
}
