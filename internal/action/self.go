package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// Self is the self-management lifecycle of a release rendered with "render --self": the
// hand-over to helm-controller (Resume), who writes it now (Status), and giving it back to the
// CLI (Handback) or removing it (Uninstall).
type Self struct {
	// Config is the cluster access of the run.
	Config *Configuration
	// Namespace is the release's.
	Namespace string
	// Timeout bounds each wait: for the release to be deployed (Resume), for the pair to be
	// gone and the guard lifted (Handback, Uninstall).
	Timeout time.Duration
	// Force resumes a failed release.
	Force bool
	// NoHooks uninstalls without running the release's hooks, as helm uninstall --no-hooks.
	NoHooks bool

	once    sync.Once
	c       *selfClients
	initErr error
}

// clients makes what the lifecycle talks to, once.
func (s *Self) clients() (*selfClients, error) {
	s.once.Do(func() {
		cfg, err := s.Config.Helm3(s.Namespace)
		if err != nil {
			s.initErr = err
			return
		}
		rc := s.Config.RESTConfig()
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			s.initErr = err
			return
		}
		dc, err := dynamic.NewForConfig(rc)
		if err != nil {
			s.initErr = err
			return
		}
		warnings := &guardWarnings{}
		prc := s.Config.RESTConfig()
		prc.WarningHandler = warnings
		pc, err := kubernetes.NewForConfig(prc)
		if err != nil {
			s.initErr = err
			return
		}
		s.c = &selfClients{helm: cfg, kube: kc, dynamic: dc, probe: pc, warnings: warnings}
	})
	return s.c, s.initErr
}

// ReleaseError names the release an error of Helm's storage is about; a missing release says
// where to look.
func ReleaseError(namespace, name string, err error) error {
	err = fmt.Errorf("release %s/%s: %w", namespace, name, err)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return &InputError{fmt.Errorf("%w (helm list -n %s shows the releases there)", err, namespace)}
	}
	return err
}

// InputError is a mistake in what the user asked for (no such release, chart or values file),
// not a failure of the cluster: the command line exits 1, not "could not measure".
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error.
func (e *InputError) Unwrap() error { return e.Err }

// waitGone waits until a deleted Flux object is gone (its controller removes its finalizer).
func (s *Self) waitGone(ctx context.Context, c *selfClients, gvr schema.GroupVersionResource, name, controller string) error {
	deadline := time.Now().Add(s.Timeout)
	for {
		if _, err := c.dynamic.Resource(gvr).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s/%s still present after %s (is %s running? it removes the finalizer)", gvr.Resource, s.Namespace, name, s.Timeout, controller)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// selfClients are what the self commands talk to.
type selfClients struct {
	helm    *action.Configuration
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	// probe asks whether the CLI guard is still enforced; its warnings are recorded, not
	// printed (the guard's warning binding answers a dry-run too).
	probe    kubernetes.Interface
	warnings *guardWarnings
}

// guardWarnings records whether the API server sent a warning from the admission policy named
// policy.
type guardWarnings struct {
	mu     sync.Mutex
	policy string
	seen   bool
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *guardWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.policy != "" && strings.Contains(text, "ValidatingAdmissionPolicy '"+w.policy+"'") {
		w.seen = true
	}
}

// take reports whether a policy warning came since the last call, and forgets it.
func (w *guardWarnings) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.seen
	w.seen = false
	return seen
}

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
		WithLabels(map[string]string{"reconcile.fluxcd.io/watch": "Enabled", transform.SelfLabel: "true"}).
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
	kept := hr.GetAnnotations()[transform.ResourcePolicyAnnotation] == transform.KeepPolicy
	res := &ResumeResult{Revision: rel.Version, Status: rel.Info.Status.String(), Values: len(values), Secret: secret, Armed: armed, Resumed: suspended, ValuesChanged: secretChanged}
	if !suspended && !secretChanged && !armed && kept {
		res.NothingToDo = true
		return res, nil
	}
	// The keep mark and the resume in one patch: helm-controller's first upgrade renders the
	// chart without the pair, and keeps what the live object marks keep.
	annotations := map[string]any{transform.ResourcePolicyAnnotation: transform.KeepPolicy}
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
	keep := map[string]any{"metadata": map[string]any{"annotations": map[string]any{transform.ResourcePolicyAnnotation: transform.KeepPolicy}}}
	repos := c.dynamic.Resource(flux.OCIRepositories).Namespace(s.Namespace)
	repo, err := repos.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("OCIRepository %s/%s: %w", s.Namespace, name, err)
	}
	if repo.GetAnnotations()[transform.ResourcePolicyAnnotation] != transform.KeepPolicy {
		body, _ := json.Marshal(keep)
		if _, err := repos.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("mark OCIRepository %s/%s keep: %w", s.Namespace, name, err)
		}
	}
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(s.Namespace, name)
	policy, err := adm.ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // rendered with --self-guard=false
	case err != nil:
		return false, fmt.Errorf("the CLI guard (ValidatingAdmissionPolicy %s): %w", guard, err)
	}
	if policy.Annotations[transform.ResourcePolicyAnnotation] != transform.KeepPolicy {
		body, _ := json.Marshal(keep)
		if _, err := adm.ValidatingAdmissionPolicies().Patch(ctx, guard, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("mark the CLI guard's ValidatingAdmissionPolicy %s keep: %w", guard, err)
		}
	}
	armed := false
	for _, b := range transform.GuardBindings(s.Namespace, name) {
		binding, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("the CLI guard's ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
		}
		actions := binding.Spec.ValidationActions
		if binding.Annotations[transform.ResourcePolicyAnnotation] == transform.KeepPolicy && len(actions) == 1 && string(actions[0]) == b.Armed {
			continue
		}
		patch := map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{transform.ResourcePolicyAnnotation: transform.KeepPolicy}},
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
	c.warnings.policy = transform.GuardName(s.Namespace, name)
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

// SelfStatus is who writes a self-managed release now, and what is stuck.
type SelfStatus struct {
	// Release is the release's latest revision; nil with ReleaseErr (Gone: not installed).
	Release    *ReleaseInfo
	ReleaseErr error
	Gone       bool
	// SourceURL and SourceRange are the OCIRepository's; empty without one.
	SourceURL, SourceRange string
	// Guard is the CLI guard's state (GuardAbsent, GuardDisarmed, GuardArmed), GuardErr why it
	// could not be read, GuardName its policy.
	Guard     string
	GuardErr  error
	GuardName string
	// HelmRelease: whether there is one, its last handled reconcile and Ready condition.
	HelmRelease        bool
	LastHandled, Ready string
	// Writer says who writes the release; Stuck, for a state nobody leaves by themselves,
	// what is stuck and the command that resolves it.
	Writer, Stuck string
}

// ReleaseInfo is one revision of a release.
type ReleaseInfo struct {
	Revision            int
	Status              string
	Chart, ChartVersion string
}

// Status says who writes the release now, and names every stuck state it can see with the one
// command that resolves it.
func (s *Self) Status(ctx context.Context, name string) (*SelfStatus, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	rel, relErr := action.NewStatus(c.helm).Run(name)
	hr, err := c.dynamic.Resource(flux.HelmReleases).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hr = nil
	case err != nil:
		return nil, fmt.Errorf("HelmRelease %s/%s: %w", s.Namespace, name, err)
	}
	st := &SelfStatus{ReleaseErr: relErr, Gone: errors.Is(relErr, driver.ErrReleaseNotFound), GuardName: transform.GuardName(s.Namespace, name), HelmRelease: hr != nil}
	if relErr == nil {
		st.Release = &ReleaseInfo{Revision: rel.Version, Status: rel.Info.Status.String(), Chart: rel.Chart.Metadata.Name, ChartVersion: rel.Chart.Metadata.Version}
	}
	if repo, err := c.dynamic.Resource(flux.OCIRepositories).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		st.SourceRange, _, _ = unstructured.NestedString(repo.Object, "spec", "ref", "semver")
		st.SourceURL, _, _ = unstructured.NestedString(repo.Object, "spec", "url")
	}
	st.Guard, st.GuardErr = s.guardState(ctx, c, name)
	if hr != nil {
		st.LastHandled, _, _ = unstructured.NestedString(hr.Object, "status", "lastHandledReconcileAt")
		st.Ready = conditionStatus(hr, "Ready")
	}
	st.Writer, st.Stuck = s.judge(name, rel, relErr, hr, st.Guard)
	return st, nil
}

// judge says who writes the release, from the release, its HelmRelease (nil: none) and the
// guard's state, and, for a state that nobody will leave by themselves, what is stuck and the
// command that resolves it.
func (s *Self) judge(name string, rel *release.Release, relErr error, hr *unstructured.Unstructured, guard string) (writer, stuck string) {
	ns := s.Namespace
	cmd := func(format string) string { return fmt.Sprintf(format, name, ns) }
	gone := errors.Is(relErr, driver.ErrReleaseNotFound)
	if hr == nil {
		if guard == GuardArmed {
			return "nobody: the CLI guard is armed but there is no HelmRelease " + ns + "/" + name,
				"the Helm CLI is refused and no HelmRelease writes the release: " + cmd(`"helm drift self handback %s -n %s"`) + " lifts the guard and leaves the release to the CLI"
		}
		return fmt.Sprintf("the Helm CLI (no HelmRelease %s/%s)", ns, name), ""
	}
	suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	var hcRevision int64
	if len(history) > 0 {
		if h, ok := history[0].(map[string]any); ok {
			hcRevision, _, _ = unstructured.NestedInt64(h, "version")
		}
	}
	switch {
	case gone && !suspended:
		return fmt.Sprintf("warning: the release is gone but HelmRelease %s/%s is active: helm-controller will install it again at its next reconcile (the pair outlives \"helm uninstall\": helm.sh/resource-policy keep); to leave it uninstalled run %s", ns, name, cmd(`"helm drift self handback %s -n %s"`)), ""
	case gone:
		return fmt.Sprintf("nobody: the release is gone and HelmRelease %s/%s is suspended (nothing installs it); %s removes the pair", ns, name, cmd(`"helm drift self handback %s -n %s"`)), ""
	case suspended && guard == GuardArmed:
		return fmt.Sprintf("nobody: HelmRelease %s/%s is suspended and the CLI guard is armed", ns, name),
			"neither the Helm CLI nor helm-controller may write the release (an interrupted hand-over, or a HelmRelease suspended by hand): " + cmd(`"helm drift self resume %s -n %s"`) + " hands it to helm-controller (or " + cmd(`"helm drift self handback %s -n %s"`) + " gives it to the CLI)"
	case suspended:
		writer = "the Helm CLI (HelmRelease suspended: the bracket is open; end it with " + cmd(`"helm drift self resume %s -n %s"`) + ")"
		if relErr != nil {
			return writer, ""
		}
		return writer, bracketStuck(rel, name, ns)
	case relErr == nil && hcRevision != 0 && int64(rel.Version) > hcRevision:
		writer = fmt.Sprintf("BOTH: warning: revision %d was written after helm-controller's revision %d while the HelmRelease is active; upgrade through Flux (push a chart version), or hand back first", rel.Version, hcRevision)
	default:
		writer = fmt.Sprintf("helm-controller (HelmRelease active; its last revision %d)", hcRevision)
	}
	if guard == GuardDisarmed {
		return writer, "helm-controller writes the release but the CLI guard is not armed, so a helm uninstall would be undone by helm-controller: " + cmd(`"helm drift self resume %s -n %s"`) + " arms it"
	}
	return writer, ""
}

// bracketStuck names a release that is pending or failed while the bracket is open: nothing
// resumes it (the resumer waits for deployed), and the guard is not armed, so Helm's own
// commands resolve it.
func bracketStuck(rel *release.Release, name, ns string) string {
	st := rel.Info.Status
	switch {
	case st.IsPending() && rel.Version == 1:
		return fmt.Sprintf("revision 1 is %s with the bracket open: a helm install is still running, or it was interrupted and nothing will finish it; if no helm command is running, \"helm uninstall %s -n %s\" removes it with the pair (nothing is kept before the hand-over), then install again", st, name, ns)
	case st.IsPending():
		return fmt.Sprintf("revision %d is %s with the bracket open: a helm command is still running, or it was interrupted and nothing will finish it; if none is running, \"helm rollback %s -n %s\" returns to the previous revision, then end the bracket with \"helm drift self resume %s -n %s\"", rel.Version, st, name, ns, name, ns)
	case st == release.StatusFailed && rel.Version == 1:
		return fmt.Sprintf("the install failed with the bracket open (%s), and nothing resumes a failed release: \"helm uninstall %s -n %s\" removes it with the pair (nothing is kept before the hand-over); or fix it with helm upgrade, then \"helm drift self resume %s -n %s\"", rel.Info.Description, name, ns, name, ns)
	case st == release.StatusFailed:
		return fmt.Sprintf("revision %d failed with the bracket open (%s), and nothing resumes a failed release: \"helm rollback %s -n %s\" (or fix it with helm upgrade), then \"helm drift self resume %s -n %s\"", rel.Version, rel.Info.Description, name, ns, name, ns)
	}
	return ""
}

// The states of the CLI guard.
const (
	// GuardAbsent: no guard (rendered with --self-guard=false, or lifted).
	GuardAbsent = "absent"
	// GuardDisarmed: rendered, not armed yet: it only audits until the hand-over.
	GuardDisarmed = "disarmed"
	// GuardArmed: the Helm CLI is refused.
	GuardArmed = "armed"
)

// guardState reads whether the release's CLI guard exists and is armed (its denying binding
// denies).
func (s *Self) guardState(ctx context.Context, c *selfClients, name string) (string, error) {
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(s.Namespace, name)
	if _, err := adm.ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return GuardAbsent, nil
	} else if err != nil {
		return "", err
	}
	bindings := transform.GuardBindings(s.Namespace, name)
	b, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, bindings[0].Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return GuardDisarmed, nil
	} else if err != nil {
		return "", err
	}
	for _, a := range b.Spec.ValidationActions {
		if string(a) == bindings[0].Armed {
			return GuardArmed, nil
		}
	}
	return GuardDisarmed, nil
}

func conditionStatus(o *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return "Unknown"
}

// Removal is what handback and uninstall removed.
type Removal struct {
	// Removed names what went, as "HelmRelease ns/app, OCIRepository ns/app and the CLI guard".
	Removed string
	// Installed: the release is (still) installed.
	Installed bool
	// Info is what the uninstall of the release said, if anything.
	Info string
}

// Handback suspends the HelmRelease and removes the pair, the values Secret and the CLI guard,
// leaving the release to the Helm CLI.
func (s *Self) Handback(ctx context.Context, name string) (*Removal, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	removed, err := s.removePair(ctx, c, name)
	if err != nil {
		return nil, err
	}
	_, err = action.NewStatus(c.helm).Run(name)
	return &Removal{Removed: removed, Installed: !errors.Is(err, driver.ErrReleaseNotFound)}, nil
}

// Uninstall removes the pair first, then uninstalls the release: "helm uninstall" alone leaves
// the pair once it is handed over (helm.sh/resource-policy: keep), and an active HelmRelease
// would install the release again. The release must exist: nothing is removed otherwise.
func (s *Self) Uninstall(ctx context.Context, name string) (*Removal, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	if _, err := action.NewStatus(c.helm).Run(name); err != nil {
		return nil, ReleaseError(s.Namespace, name, err)
	}
	removed, err := s.removePair(ctx, c, name)
	if err != nil {
		return nil, err
	}
	un := action.NewUninstall(c.helm)
	un.DisableHooks, un.Timeout = s.NoHooks, s.Timeout
	res, err := un.Run(name)
	if err != nil {
		return nil, fmt.Errorf("the pair is removed, but uninstalling release %s/%s failed (run helm uninstall %s -n %s): %w", s.Namespace, name, name, s.Namespace, err)
	}
	r := &Removal{Removed: removed}
	if res != nil {
		r.Info = strings.TrimSpace(res.Info)
	}
	return r, nil
}

// removePair suspends the HelmRelease, lifts the CLI guard, then deletes the HelmRelease, its
// OCIRepository, the values Secret and the resumer's cluster-wide role, waiting for each Flux
// object to be gone; it says what it removed. A HelmRelease already gone (deleted by hand) is no
// reason to leave the rest: the guard would refuse the CLI with nobody else to write the
// release. With none of them present the CLI owns the release already, and that is an error.
func (s *Self) removePair(ctx context.Context, c *selfClients, name string) (string, error) {
	hrs := c.dynamic.Resource(flux.HelmReleases).Namespace(s.Namespace)
	hr, err := hrs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hr = nil
	case err != nil:
		return "", err
	}
	secret := name + "-values"
	var removed []string
	if hr != nil {
		secret = valuesSecretOf(hr, name)
		// Suspended first: helm-controller does not uninstall a suspended HelmRelease it deletes.
		if _, err := hrs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return "", fmt.Errorf("suspend HelmRelease %s/%s: %w", s.Namespace, name, err)
		}
	}
	// Then the CLI guard, which refuses the CLI's deletes of the release's objects (the pair is
	// one of them); with the HelmRelease suspended, nobody writes the release meanwhile.
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(s.Namespace, name)
	guarded := false
	for _, b := range transform.GuardBindings(s.Namespace, name) {
		err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s (the CLI guard): %w", b.Name, err)
		}
		guarded = guarded || err == nil
	}
	err = adm.ValidatingAdmissionPolicies().Delete(ctx, guard, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete ValidatingAdmissionPolicy %s (the CLI guard): %w", guard, err)
	}
	guarded = guarded || err == nil
	if guarded {
		if err := s.waitGuardLifted(ctx, c, name); err != nil {
			return "", err
		}
	}
	if hr != nil {
		if err := hrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete HelmRelease %s/%s: %w", s.Namespace, name, err)
		}
		if err := s.waitGone(ctx, c, flux.HelmReleases, name, "helm-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "HelmRelease "+s.Namespace+"/"+name)
	}
	switch err := c.dynamic.Resource(flux.OCIRepositories).Namespace(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); {
	case err == nil:
		if err := s.waitGone(ctx, c, flux.OCIRepositories, name, "source-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "OCIRepository "+s.Namespace+"/"+name)
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("delete OCIRepository %s/%s: %w", s.Namespace, name, err)
	}
	// The values Secret: the one the HelmRelease names, or, without it, the default one if
	// "self resume" wrote it (it carries the self label).
	secrets := c.kube.CoreV1().Secrets(s.Namespace)
	if sec, err := secrets.Get(ctx, secret, metav1.GetOptions{}); err == nil && (hr != nil || sec.Labels[transform.SelfLabel] == "true") {
		if err := secrets.Delete(ctx, secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete values Secret %s/%s: %w", s.Namespace, secret, err)
		}
		removed = append(removed, "Secret "+s.Namespace+"/"+secret)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("values Secret %s/%s: %w", s.Namespace, secret, err)
	}
	// The resumer's ClusterRole and binding are objects of the CLI's revision; helm-controller's
	// first upgrade deletes them only if its identity may delete cluster-wide roles.
	// Tidying only: a user who may not delete cluster-wide roles loses nothing by skipping it.
	resumer := guard + ".resumer"
	if err := c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, resumer, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return "", fmt.Errorf("delete ClusterRoleBinding %s (the resumer's): %w", resumer, err)
	}
	if err := c.kube.RbacV1().ClusterRoles().Delete(ctx, resumer, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return "", fmt.Errorf("delete ClusterRole %s (the resumer's): %w", resumer, err)
	}
	if guarded {
		removed = append(removed, "the CLI guard")
	}
	if len(removed) == 0 {
		return "", fmt.Errorf("no HelmRelease %s/%s, OCIRepository or CLI guard of release %s: the CLI owns the release already", s.Namespace, name, name)
	}
	return joinAnd(removed), nil
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
