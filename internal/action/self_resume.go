package action

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

// ResumeResult is what a hand-over did.
type ResumeResult struct {
	// Revision and Status are the release's latest revision when it was handed over.
	Revision int
	Status   string
	// Values is the number of top-level keys of the user-supplied values written to Secret.
	Values int
	Secret string
	// NothingToDo: everything was handed over already.
	NothingToDo bool
	// Armed: the CLI guard was armed now.
	Armed bool
	// Resumed: the HelmRelease was suspended and is resumed now; else, with ValuesChanged, a
	// reconcile was requested for the new values, else it was only marked keep.
	Resumed, ValuesChanged bool
}

// Resume hands the release to helm-controller and ends the bracket: it waits until the release
// is deployed, writes its user-supplied values into the values Secret, marks the pair and the
// guard keep, arms the guard, then resumes the HelmRelease.
func (s *Self) Resume(ctx context.Context, name string) (*ResumeResult, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	hr, err := c.dynamic.Resource(flux.HelmReleases).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no HelmRelease %s/%s: render the release with --self first", s.Namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("HelmRelease %s/%s: %w", s.Namespace, name, err)
	}
	rel, err := s.waitDeployed(ctx, c, name)
	if err != nil {
		return nil, err
	}
	values, err := action.NewGetValues(c.helm).Run(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: user-supplied values: %w", s.Namespace, name, err)
	}
	data, err := sigsyaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	secret := valuesSecretOf(hr, name)
	secrets := c.kube.CoreV1().Secrets(s.Namespace)
	before := ""
	if sec, err := secrets.Get(ctx, secret, metav1.GetOptions{}); err == nil {
		before = sec.ResourceVersion
	}
	applied, err := secrets.Apply(ctx, applycorev1.Secret(secret, s.Namespace).
		WithLabels(map[string]string{"reconcile.fluxcd.io/watch": "Enabled", selfmanaged.SelfLabel: "true"}).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{"values.yaml": data}),
		metav1.ApplyOptions{FieldManager: "helm-drift", Force: true})
	if err != nil {
		return nil, fmt.Errorf("values Secret %s/%s: %w", s.Namespace, secret, err)
	}
	secretChanged := applied.ResourceVersion != before
	armed, err := s.handOver(ctx, c, name)
	if err != nil {
		return nil, fmt.Errorf("%w: nothing resumed; run helm drift self resume %s -n %s again once it is fixed", err, name, s.Namespace)
	}
	suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	kept := hr.GetAnnotations()[selfmanaged.ResourcePolicyAnnotation] == selfmanaged.KeepPolicy
	res := &ResumeResult{Revision: rel.Version, Status: rel.Info.Status.String(), Values: len(values), Secret: secret, Armed: armed, Resumed: suspended, ValuesChanged: secretChanged}
	if !suspended && !secretChanged && !armed && kept {
		res.NothingToDo = true
		return res, nil
	}
	// The keep mark and the resume in one patch: helm-controller's first upgrade renders the
	// chart without the pair, and keeps what the live object marks keep.
	annotations := map[string]any{selfmanaged.ResourcePolicyAnnotation: selfmanaged.KeepPolicy}
	if suspended || secretChanged {
		annotations["reconcile.fluxcd.io/requestedAt"] = time.Now().UTC().Format(time.RFC3339Nano)
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	if suspended {
		patch["spec"] = map[string]any{"suspend": false}
	}
	body, _ := json.Marshal(patch)
	if _, err := c.dynamic.Resource(flux.HelmReleases).Namespace(s.Namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
		return nil, fmt.Errorf("resume HelmRelease %s/%s: %w", s.Namespace, name, err)
	}
	return res, nil
}

// handOver prepares the hand-over to helm-controller: it marks the OCIRepository and the CLI
// guard helm.sh/resource-policy: keep (helm-controller's first upgrade renders the chart
// without them, and Helm keeps a dropped object whose live copy says keep) and arms the guard's
// bindings. Until now they were ordinary objects of the release, so that Helm's own recovery
// (a failed --atomic install, helm uninstall) could remove them. It reports whether it armed a
// guard that was not armed; a release rendered without the guard has none to arm.
func (s *Self) handOver(ctx context.Context, c *selfClients, name string) (bool, error) {
	keep := map[string]any{"metadata": map[string]any{"annotations": map[string]any{selfmanaged.ResourcePolicyAnnotation: selfmanaged.KeepPolicy}}}
	repos := c.dynamic.Resource(flux.OCIRepositories).Namespace(s.Namespace)
	repo, err := repos.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("OCIRepository %s/%s: %w", s.Namespace, name, err)
	}
	if repo.GetAnnotations()[selfmanaged.ResourcePolicyAnnotation] != selfmanaged.KeepPolicy {
		body, _ := json.Marshal(keep)
		if _, err := repos.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("mark OCIRepository %s/%s keep: %w", s.Namespace, name, err)
		}
	}
	adm := c.kube.AdmissionregistrationV1()
	guard := selfmanaged.GuardName(s.Namespace, name)
	policy, err := adm.ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // rendered with --self-guard=false
	case err != nil:
		return false, fmt.Errorf("the CLI guard (ValidatingAdmissionPolicy %s): %w", guard, err)
	}
	if policy.Annotations[selfmanaged.ResourcePolicyAnnotation] != selfmanaged.KeepPolicy {
		body, _ := json.Marshal(keep)
		if _, err := adm.ValidatingAdmissionPolicies().Patch(ctx, guard, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("mark the CLI guard's ValidatingAdmissionPolicy %s keep: %w", guard, err)
		}
	}
	armed := false
	for _, b := range selfmanaged.GuardBindings(s.Namespace, name) {
		binding, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("the CLI guard's ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
		}
		actions := binding.Spec.ValidationActions
		if binding.Annotations[selfmanaged.ResourcePolicyAnnotation] == selfmanaged.KeepPolicy && len(actions) == 1 && string(actions[0]) == b.Armed {
			continue
		}
		patch := map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{selfmanaged.ResourcePolicyAnnotation: selfmanaged.KeepPolicy}},
			"spec":     map[string]any{"validationActions": []string{b.Armed}},
		}
		body, _ := json.Marshal(patch)
		if _, err := adm.ValidatingAdmissionPolicyBindings().Patch(ctx, b.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("arm the CLI guard's ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
		}
		armed = true
	}
	return armed, nil
}

// waitDeployed waits until the release's latest revision is deployed.
func (s *Self) waitDeployed(ctx context.Context, c *selfClients, name string) (*release.Release, error) {
	deadline := time.Now().Add(s.Timeout)
	for {
		rel, err := action.NewStatus(c.helm).Run(name)
		if err != nil {
			return nil, fmt.Errorf("release %s/%s: %w", s.Namespace, name, err)
		}
		switch st := rel.Info.Status; {
		case st == release.StatusDeployed:
			return rel, nil
		case st == release.StatusFailed && s.Force:
			return rel, nil
		case st == release.StatusFailed:
			return nil, fmt.Errorf("release %s/%s revision %d failed (%s): nothing resumed; the CLI guard is not armed before the hand-over, so fix it with helm upgrade (or helm rollback), or remove it with helm uninstall %s -n %s; or resume anyway with --force", s.Namespace, name, rel.Version, rel.Info.Description, name, s.Namespace)
		case !st.IsPending():
			return nil, fmt.Errorf("release %s/%s revision %d is %s, not deployed: nothing resumed", s.Namespace, name, rel.Version, st)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("release %s/%s revision %d still %s after %s: nothing resumed; run resume again once the CLI is done", s.Namespace, name, rel.Version, st, s.Timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// valuesSecretOf reads the values Secret's name from the HelmRelease's valuesFrom.
func valuesSecretOf(hr *unstructured.Unstructured, release string) string {
	refs, _, _ := unstructured.NestedSlice(hr.Object, "spec", "valuesFrom")
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["kind"] == "Secret" {
			if n, _ := m["name"].(string); n != "" {
				return n
			}
		}
	}
	return release + "-values"
}

// waitGuardLifted waits until the API server no longer enforces the CLI guard (it drops a
// deleted policy from its admission cache a moment after the delete): it asks with dry-run
// creates of a storage Secret of the release, which admission judges like the real write.
func (s *Self) waitGuardLifted(ctx context.Context, c *selfClients, name string) error {
	probe := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".guard-probe", Labels: map[string]string{"name": name, "owner": "helm"}},
		Type:       "helm.sh/release.v1",
	}
	c.warnings.mu.Lock()
	c.warnings.policy = selfmanaged.GuardName(s.Namespace, name)
	c.warnings.mu.Unlock()
	deadline := time.Now().Add(s.Timeout)
	for {
		_, err := c.probe.CoreV1().Secrets(s.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		warned := c.warnings.take()
		if (err == nil || apierrors.IsAlreadyExists(err)) && !warned {
			return nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return fmt.Errorf("check that the CLI guard is lifted (a dry-run create of a storage Secret of %s/%s): %w", s.Namespace, name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CLI guard of %s/%s is deleted but the API server still enforces it after %s: retry helm drift self handback", s.Namespace, name, s.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
