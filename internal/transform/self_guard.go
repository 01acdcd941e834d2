package transform

import (
	"fmt"

	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

// guard renders the ValidatingAdmissionPolicy and its bindings that make the Helm CLI day-0 only
// for this release once helm-controller has adopted it. Until the hand-over arms it (Adopted
// false), its bindings only audit: the install, a failed install's --atomic uninstall, a
// helm uninstall, upgrade or rollback of a release not yet handed over all pass, and nothing is
// kept, so no failure before the hand-over leaves a release that neither Helm nor
// helm-controller can finish or remove. Armed, anyone but helm-controller's writer (or, for a
// namespaced object, anyone while the namespace carries selfmanaged.AllowCLIAnnotation) is refused:
//   - a CREATE of one of the release's storage Secrets (type helm.sh/release.v1, label
//     name=RELEASE, in its namespace): a revision helm-controller did not make;
//   - the uninstall: the UPDATE that marks the last revision "uninstalling", and a DELETE of a
//     storage Secret or of an object of the release (annotated meta.helm.sh/release-name and
//     -namespace). Helm deletes the release's objects before it purges its history and only
//     logs a failed status update, so the refused deletes leave the release deployed and whole;
//     without the refusal, an active HelmRelease would install it again.
//
// Kubernetes' own controllers (kube-system ServiceAccounts, kube-controller-manager) may still
// delete, so that deleting the namespace or garbage collection is never blocked. Other updates
// pass: the CLI's own install and the upgrade that brings the pair in mark their revision
// deployed with an update. Admission configuration kinds
// (webhook configurations, admission policies) are exempt from admission policies: a refused
// uninstall still deletes those of the chart, and helm-controller's next upgrade or drift
// correction puts them back. A second binding repeats each refusal as a warning, which Helm
// prints: for the uninstall, Helm itself reports only "failed to delete release".
// Every field is read through CEL optionals: the DELETE rule matches every kind, and a field a
// kind lacks would be an evaluation error, which failurePolicy Fail turns into a refusal.
// xref: Kubernetes docs, "Validating Admission Policy" (admissionregistration.k8s.io/v1, GA
// in v1.30; matching cluster-scoped objects; exempt resources); Helm v3 pkg/storage/driver/
// secrets.go (the storage Secrets' type and labels); Helm v3/v4 pkg/action/uninstall.go (the
// order of uninstall: status update, deletes, purge).
func (s *Self) guard(valuesSecret string) []map[string]any {
	name := selfmanaged.GuardName(s.Namespace, s.Release)
	meta := func(name string) map[string]any {
		m := map[string]any{"name": name, "labels": map[string]any{selfmanaged.SelfLabel: "true"}}
		if s.Adopted {
			m["annotations"] = map[string]any{selfmanaged.ResourcePolicyAnnotation: selfmanaged.KeepPolicy}
		}
		return m
	}
	writeMessage := fmt.Sprintf("release %s/%s is managed by Flux (HelmRelease %s/%s): the Helm CLI may not write a new revision of it. "+
		"Change its values in Secret %s/%s (key values.yaml) and let helm-controller upgrade it, "+
		"or give the release back to the CLI first: helm drift self handback %s -n %s",
		s.Namespace, s.Release, s.Namespace, s.Release, s.Namespace, valuesSecret, s.Release, s.Namespace)
	uninstallMessage := fmt.Sprintf("release %s/%s is managed by Flux (HelmRelease %s/%s): only helm-controller deletes its objects and history "+
		"(after a helm uninstall, helm-controller would install the release again). Uninstall it with: helm drift self uninstall %s -n %s "+
		"(or give it back to the CLI first: helm drift self handback %s -n %s)",
		s.Namespace, s.Release, s.Namespace, s.Release, s.Release, s.Namespace, s.Release, s.Namespace)
	storage := func(o string) string {
		return fmt.Sprintf("%s.?type.orValue(\"\") == \"helm.sh/release.v1\" && request.namespace == %q && %s.metadata.?labels[?\"name\"].orValue(\"\") == %q", o, s.Namespace, o, s.Release)
	}
	releaseObject := fmt.Sprintf("oldObject.metadata.?annotations[?\"meta.helm.sh/release-name\"].orValue(\"\") == %q && oldObject.metadata.?annotations[?\"meta.helm.sh/release-namespace\"].orValue(\"\") == %q",
		s.Release, s.Namespace)
	allowed := fmt.Sprintf("request.userInfo.username == %q || (namespaceObject != null && namespaceObject.metadata.?annotations[?%q].orValue(\"\") == \"true\")",
		s.Writer(), selfmanaged.AllowCLIAnnotation)
	kubernetes := `request.userInfo.username.startsWith("system:serviceaccount:kube-system:") || request.userInfo.username == "system:kube-controller-manager"`
	policy := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": meta(name),
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{
				"resourceRules": []any{
					map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE", "UPDATE"}, "resources": []any{"secrets"}},
					map[string]any{"apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "operations": []any{"DELETE"}, "resources": []any{"*"}, "scope": "*"},
				},
			},
			"matchConditions": []any{map[string]any{
				"name": "release-write",
				"expression": fmt.Sprintf("request.operation == \"DELETE\" ? (oldObject != null && ((%s) || (%s))) : "+
					"((%s) && (request.operation == \"CREATE\" || object.metadata.?labels[?\"status\"].orValue(\"\") == \"uninstalling\"))",
					releaseObject, storage("oldObject"), storage("object")),
			}},
			"validations": []any{
				map[string]any{"expression": fmt.Sprintf("request.operation != \"CREATE\" || %s", allowed), "message": writeMessage, "reason": "Forbidden"},
				map[string]any{"expression": fmt.Sprintf("request.operation == \"CREATE\" || %s || %s", allowed, kubernetes), "message": uninstallMessage, "reason": "Forbidden"},
			},
		},
	}
	objs := []map[string]any{policy}
	for _, b := range selfmanaged.GuardBindings(s.Namespace, s.Release) {
		action := selfmanaged.GuardDisarmed
		if s.Adopted {
			action = b.Armed
		}
		objs = append(objs, map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta(b.Name),
			"spec": map[string]any{"policyName": name, "validationActions": []any{action}},
		})
	}
	return objs
}
