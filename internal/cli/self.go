package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
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
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/transform"
)

const selfUsage = `The self-management lifecycle of a release rendered with "render --self".

Until the hand-over, the pair (OCIRepository, HelmRelease) and the CLI guard are ordinary
objects of the release and the guard only audits: the Helm CLI may still upgrade, roll back and
uninstall the release, so a failed --atomic install (Helm 4: --rollback-on-failure) leaves
nothing, and helm uninstall removes a failed or never-resumed install completely. The hand-over
(resume, by hand or by the resumer Job) arms the guard and marks the pair and the guard
helm.sh/resource-policy: keep; from then on only helm-controller writes or uninstalls the release.

Usage:
  helm drift self resume RELEASE [-n NAMESPACE] [--timeout 300s] [--force]
      The hand-over; ends the suspend bracket: waits until the release is deployed (still
      pending after --timeout: exit 1, nothing resumed; failed: exit 1 unless --force), writes
      the release's user-supplied values (never the merged tree) into the values Secret by
      server-side apply, labelled reconcile.fluxcd.io/watch: Enabled, marks the pair and the
      guard keep, arms the guard, then resumes the HelmRelease and requests a reconcile. A
      second run changes nothing.
  helm drift self status RELEASE [-n NAMESPACE]
      Who writes the release now: the CLI (no HelmRelease, or suspended), helm-controller, or
      both (a warning); revision, chart version, range, whether the CLI guard is armed, last
      reconcile. A release uninstalled with its pair left active is a warning: helm-controller
      will install it again. Every state nobody leaves by themselves gets a "stuck:" line with
      the command that resolves it: a pending or failed release with the bracket open, a
      suspended HelmRelease with the guard armed, an armed guard without a HelmRelease, an
      active HelmRelease with the guard not armed.
  helm drift self handback RELEASE [-n NAMESPACE]
      Suspends the HelmRelease, lifts the CLI guard (ValidatingAdmissionPolicy and bindings),
      then removes the HelmRelease, its OCIRepository and the values Secret, leaving the
      release installed and owned by the CLI. Whatever of them is left is removed even when the
      HelmRelease is already gone.
  helm drift self uninstall RELEASE [-n NAMESPACE] [--no-hooks]
      Removes the pair, the values Secret and the CLI guard (as handback), then uninstalls the
      release. Use it instead of helm uninstall once the release is handed over: with the guard
      armed, helm uninstall is refused before it deletes anything; without it, helm uninstall
      leaves the pair (helm.sh/resource-policy: keep), and an active HelmRelease installs the
      release again.
`

// waitGone waits until a deleted Flux object is gone (its controller removes its finalizer).
func (o *selfOptions) waitGone(ctx context.Context, c *selfClients, gvr schema.GroupVersionResource, name, controller string) error {
	deadline := time.Now().Add(o.timeout)
	for {
		if _, err := c.dynamic.Resource(gvr).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s/%s still present after %s (is %s running? it removes the finalizer)", gvr.Resource, o.namespace, name, o.timeout, controller)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

var (
	helmReleasesGVR    = schema.GroupVersionResource{Group: transform.HelmReleaseGroup, Version: "v2", Resource: "helmreleases"}
	ociRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
)

// selfOptions are the flags of `self`.
type selfOptions struct {
	namespace string
	timeout   time.Duration
	force     bool
	noHooks   bool
	kube      kubeOptions
}

// BindFlags registers the self flags on fs.
func (o *selfOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	fs.DurationVar(&o.timeout, "timeout", 300*time.Second, "resume: how long to wait for the release to be deployed; handback: for the pair to be gone and the CLI guard lifted")
	fs.BoolVar(&o.force, "force", false, "resume: resume even when the release failed")
	fs.BoolVar(&o.noHooks, "no-hooks", false, "uninstall: do not run the release's hooks, as helm uninstall --no-hooks")
	o.kube.BindFlags(fs)
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

func (o *selfOptions) clients() (*selfClients, error) {
	cfg, getter, err := o.kube.helmConfiguration(o.namespace, &live.Counts{})
	if err != nil {
		return nil, err
	}
	rc, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	warnings := &guardWarnings{}
	prc := rest.CopyConfig(rc)
	prc.WarningHandler = warnings
	pc, err := kubernetes.NewForConfig(prc)
	if err != nil {
		return nil, err
	}
	return &selfClients{helm: cfg, kube: kc, dynamic: dc, probe: pc, warnings: warnings}, nil
}

func runSelf(args []string, in io.Reader, out, errOut io.Writer) int {
	var o selfOptions
	fs := pflag.NewFlagSet("self", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, selfUsage, args, out, errOut); done {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(errOut, "helm-drift self: want a subcommand and a release: self resume|status|handback|uninstall RELEASE\n")
		return ExitError
	}
	sub, name := fs.Arg(0), fs.Arg(1)
	run := map[string]func(context.Context, *selfClients, string, io.Writer) error{
		"resume": o.resume, "status": o.status, "handback": o.handback, "uninstall": o.uninstall,
	}[sub]
	if run == nil {
		fmt.Fprintf(errOut, "helm-drift self: unknown subcommand %q: want resume, status, handback or uninstall\n", sub)
		return ExitError
	}
	c, err := o.clients()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift self %s: %v\n", sub, err)
		return ExitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout+2*time.Minute)
	defer cancel()
	if err := run(ctx, c, name, out); err != nil {
		fmt.Fprintf(errOut, "helm-drift self %s: %v\n", sub, err)
		return ExitError
	}
	return ExitOK
}

// resume ends the bracket.
func (o *selfOptions) resume(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	hr, err := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no HelmRelease %s/%s: render the release with --self first", o.namespace, name)
	}
	if err != nil {
		return fmt.Errorf("HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	rel, err := o.waitDeployed(ctx, c, name)
	if err != nil {
		return err
	}
	values, err := action.NewGetValues(c.helm).Run(name)
	if err != nil {
		return fmt.Errorf("release %s/%s: user-supplied values: %w", o.namespace, name, err)
	}
	data, err := sigsyaml.Marshal(values)
	if err != nil {
		return err
	}
	secret := valuesSecretOf(hr, name)
	secrets := c.kube.CoreV1().Secrets(o.namespace)
	before := ""
	if s, err := secrets.Get(ctx, secret, metav1.GetOptions{}); err == nil {
		before = s.ResourceVersion
	}
	applied, err := secrets.Apply(ctx, applycorev1.Secret(secret, o.namespace).
		WithLabels(map[string]string{"reconcile.fluxcd.io/watch": "Enabled", transform.SelfLabel: "true"}).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{"values.yaml": data}),
		metav1.ApplyOptions{FieldManager: "helm-drift", Force: true})
	if err != nil {
		return fmt.Errorf("values Secret %s/%s: %w", o.namespace, secret, err)
	}
	secretChanged := applied.ResourceVersion != before
	armed, err := o.handOver(ctx, c, name)
	if err != nil {
		return fmt.Errorf("%w: nothing resumed; run helm drift self resume %s -n %s again once it is fixed", err, name, o.namespace)
	}
	suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	kept := hr.GetAnnotations()[transform.ResourcePolicyAnnotation] == transform.KeepPolicy
	if !suspended && !secretChanged && !armed && kept {
		fmt.Fprintf(out, "HelmRelease %s/%s already resumed and values Secret %s up to date (revision %d): nothing to do\n", o.namespace, name, secret, rel.Version)
		return nil
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
	if _, err := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
		return fmt.Errorf("resume HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	fmt.Fprintf(out, "release %s/%s revision %d is %s; its user-supplied values (%s) written to Secret %s\n", o.namespace, name, rel.Version, rel.Info.Status, plural(len(values), "top-level key"), secret)
	if armed {
		fmt.Fprintf(out, "CLI guard armed (ValidatingAdmissionPolicy %s): from now on the Helm CLI may not upgrade, roll back or uninstall the release\n", transform.GuardName(o.namespace, name))
	}
	switch {
	case suspended:
		fmt.Fprintf(out, "HelmRelease %s/%s resumed and reconcile requested: helm-controller writes the release from now on\n", o.namespace, name)
	case secretChanged:
		fmt.Fprintf(out, "HelmRelease %s/%s was active; reconcile requested for the new values\n", o.namespace, name)
	default:
		fmt.Fprintf(out, "HelmRelease %s/%s was active and marked %s: %s\n", o.namespace, name, transform.ResourcePolicyAnnotation, transform.KeepPolicy)
	}
	return nil
}

// handOver prepares the hand-over to helm-controller: it marks the OCIRepository and the CLI
// guard helm.sh/resource-policy: keep (helm-controller's first upgrade renders the chart
// without them, and Helm keeps a dropped object whose live copy says keep) and arms the guard's
// bindings. Until now they were ordinary objects of the release, so that Helm's own recovery
// (a failed --atomic install, helm uninstall) could remove them. It reports whether it armed a
// guard that was not armed; a release rendered without the guard has none to arm.
func (o *selfOptions) handOver(ctx context.Context, c *selfClients, name string) (bool, error) {
	keep := map[string]any{"metadata": map[string]any{"annotations": map[string]any{transform.ResourcePolicyAnnotation: transform.KeepPolicy}}}
	repos := c.dynamic.Resource(ociRepositoriesGVR).Namespace(o.namespace)
	repo, err := repos.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("OCIRepository %s/%s: %w", o.namespace, name, err)
	}
	if repo.GetAnnotations()[transform.ResourcePolicyAnnotation] != transform.KeepPolicy {
		body, _ := json.Marshal(keep)
		if _, err := repos.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return false, fmt.Errorf("mark OCIRepository %s/%s keep: %w", o.namespace, name, err)
		}
	}
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(o.namespace, name)
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
	for _, b := range transform.GuardBindings(o.namespace, name) {
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
func (o *selfOptions) waitDeployed(ctx context.Context, c *selfClients, name string) (*release.Release, error) {
	deadline := time.Now().Add(o.timeout)
	for {
		rel, err := action.NewStatus(c.helm).Run(name)
		if err != nil {
			return nil, fmt.Errorf("release %s/%s: %w", o.namespace, name, err)
		}
		switch st := rel.Info.Status; {
		case st == release.StatusDeployed:
			return rel, nil
		case st == release.StatusFailed && o.force:
			return rel, nil
		case st == release.StatusFailed:
			return nil, fmt.Errorf("release %s/%s revision %d failed (%s): nothing resumed; the CLI guard is not armed before the hand-over, so fix it with helm upgrade (or helm rollback), or remove it with helm uninstall %s -n %s; or resume anyway with --force", o.namespace, name, rel.Version, rel.Info.Description, name, o.namespace)
		case !st.IsPending():
			return nil, fmt.Errorf("release %s/%s revision %d is %s, not deployed: nothing resumed", o.namespace, name, rel.Version, st)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("release %s/%s revision %d still %s after %s: nothing resumed; run resume again once the CLI is done", o.namespace, name, rel.Version, st, o.timeout)
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
func (o *selfOptions) waitGuardLifted(ctx context.Context, c *selfClients, name string) error {
	probe := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".guard-probe", Labels: map[string]string{"name": name, "owner": "helm"}},
		Type:       "helm.sh/release.v1",
	}
	c.warnings.mu.Lock()
	c.warnings.policy = transform.GuardName(o.namespace, name)
	c.warnings.mu.Unlock()
	deadline := time.Now().Add(o.timeout)
	for {
		_, err := c.probe.CoreV1().Secrets(o.namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		warned := c.warnings.take()
		if (err == nil || apierrors.IsAlreadyExists(err)) && !warned {
			return nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return fmt.Errorf("check that the CLI guard is lifted (a dry-run create of a storage Secret of %s/%s): %w", o.namespace, name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CLI guard of %s/%s is deleted but the API server still enforces it after %s: retry helm drift self handback", o.namespace, name, o.timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// status says who writes the release now, and names every stuck state it can see with the
// one command that resolves it.
func (o *selfOptions) status(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	rel, relErr := action.NewStatus(c.helm).Run(name)
	hr, err := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hr = nil
	case err != nil:
		return fmt.Errorf("HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	gone := errors.Is(relErr, driver.ErrReleaseNotFound)
	switch {
	case relErr == nil:
		fmt.Fprintf(out, "release:   %s/%s revision %d, %s, chart %s-%s\n", o.namespace, name, rel.Version, rel.Info.Status, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version)
	case gone:
		fmt.Fprintf(out, "release:   %s/%s: not installed\n", o.namespace, name)
	default:
		fmt.Fprintf(out, "release:   %s/%s: %v\n", o.namespace, name, relErr)
	}
	if repo, err := c.dynamic.Resource(ociRepositoriesGVR).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		rng, _, _ := unstructured.NestedString(repo.Object, "spec", "ref", "semver")
		url, _, _ := unstructured.NestedString(repo.Object, "spec", "url")
		fmt.Fprintf(out, "source:    %s, range %s\n", url, rng)
	}
	guard := transform.GuardName(o.namespace, name)
	state, err := o.guardState(ctx, c, name)
	switch {
	case err != nil:
		fmt.Fprintf(out, "guard:     unknown: %v\n", err)
	case state == guardArmed:
		fmt.Fprintf(out, "guard:     armed (ValidatingAdmissionPolicy %s): the Helm CLI may not upgrade, roll back or uninstall the release\n", guard)
	case state == guardDisarmed:
		fmt.Fprintf(out, "guard:     not armed yet (ValidatingAdmissionPolicy %s only audits until the hand-over): the Helm CLI may still upgrade, roll back and uninstall the release\n", guard)
	default:
		fmt.Fprintf(out, "guard:     off: nothing keeps the Helm CLI from writing or uninstalling the release\n")
	}
	if hr != nil {
		handled, _, _ := unstructured.NestedString(hr.Object, "status", "lastHandledReconcileAt")
		fmt.Fprintf(out, "reconcile: last handled %s; Ready=%s\n", orNone(handled), conditionStatus(hr, "Ready"))
	}
	writer, stuck := o.judge(name, rel, relErr, hr, state)
	fmt.Fprintf(out, "writer:    %s\n", writer)
	if stuck != "" {
		fmt.Fprintf(out, "stuck:     %s\n", stuck)
	}
	return nil
}

// judge says who writes the release, from the release, its HelmRelease (nil: none) and the
// guard's state, and, for a state that nobody will leave by themselves, what is stuck and the
// command that resolves it.
func (o *selfOptions) judge(name string, rel *release.Release, relErr error, hr *unstructured.Unstructured, guard string) (writer, stuck string) {
	ns := o.namespace
	cmd := func(format string) string { return fmt.Sprintf(format, name, ns) }
	gone := errors.Is(relErr, driver.ErrReleaseNotFound)
	if hr == nil {
		if guard == guardArmed {
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
	case suspended && guard == guardArmed:
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
	if guard == guardDisarmed {
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
	guardAbsent   = "absent"
	guardDisarmed = "disarmed"
	guardArmed    = "armed"
)

// guardState reads whether the release's CLI guard exists and is armed (its denying binding
// denies).
func (o *selfOptions) guardState(ctx context.Context, c *selfClients, name string) (string, error) {
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(o.namespace, name)
	if _, err := adm.ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return guardAbsent, nil
	} else if err != nil {
		return "", err
	}
	bindings := transform.GuardBindings(o.namespace, name)
	b, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, bindings[0].Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return guardDisarmed, nil
	} else if err != nil {
		return "", err
	}
	for _, a := range b.Spec.ValidationActions {
		if string(a) == bindings[0].Armed {
			return guardArmed, nil
		}
	}
	return guardDisarmed, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orNone(s string) string {
	if s == "" {
		return "never"
	}
	return s
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

// handback suspends the HelmRelease and removes the pair, the values Secret and the CLI guard.
func (o *selfOptions) handback(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	removed, err := o.removePair(ctx, c, name)
	if err != nil {
		return err
	}
	if _, err := action.NewStatus(c.helm).Run(name); errors.Is(err, driver.ErrReleaseNotFound) {
		fmt.Fprintf(out, "%s removed; release %s/%s is not installed, and nothing will install it again\n", removed, o.namespace, name)
		return nil
	}
	fmt.Fprintf(out, "%s removed; release %s/%s stays installed and the Helm CLI owns it again\n", removed, o.namespace, name)
	return nil
}

// uninstall removes the pair first, then uninstalls the release: "helm uninstall" alone leaves
// the pair once it is handed over (helm.sh/resource-policy: keep), and an active HelmRelease
// would install the release again. The release must exist: nothing is removed otherwise.
func (o *selfOptions) uninstall(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	if _, err := action.NewStatus(c.helm).Run(name); err != nil {
		return releaseError(o.namespace, name, err)
	}
	removed, err := o.removePair(ctx, c, name)
	if err != nil {
		return err
	}
	un := action.NewUninstall(c.helm)
	un.DisableHooks, un.Timeout = o.noHooks, o.timeout
	res, err := un.Run(name)
	if err != nil {
		return fmt.Errorf("the pair is removed, but uninstalling release %s/%s failed (run helm uninstall %s -n %s): %w", o.namespace, name, name, o.namespace, err)
	}
	fmt.Fprintf(out, "%s removed; release %s/%s uninstalled", removed, o.namespace, name)
	if res != nil && res.Info != "" {
		fmt.Fprintf(out, " (%s)", strings.TrimSpace(res.Info))
	}
	fmt.Fprintln(out, ": nothing will install it again")
	return nil
}

// removePair suspends the HelmRelease, lifts the CLI guard, then deletes the HelmRelease, its
// OCIRepository, the values Secret and the resumer's cluster-wide role, waiting for each Flux
// object to be gone; it says what it removed. A HelmRelease already gone (deleted by hand) is no
// reason to leave the rest: the guard would refuse the CLI with nobody else to write the
// release. With none of them present the CLI owns the release already, and that is an error.
func (o *selfOptions) removePair(ctx context.Context, c *selfClients, name string) (string, error) {
	hrs := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace)
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
			return "", fmt.Errorf("suspend HelmRelease %s/%s: %w", o.namespace, name, err)
		}
	}
	// Then the CLI guard, which refuses the CLI's deletes of the release's objects (the pair is
	// one of them); with the HelmRelease suspended, nobody writes the release meanwhile.
	adm := c.kube.AdmissionregistrationV1()
	guard := transform.GuardName(o.namespace, name)
	guarded := false
	for _, b := range transform.GuardBindings(o.namespace, name) {
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
		if err := o.waitGuardLifted(ctx, c, name); err != nil {
			return "", err
		}
	}
	if hr != nil {
		if err := hrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete HelmRelease %s/%s: %w", o.namespace, name, err)
		}
		if err := o.waitGone(ctx, c, helmReleasesGVR, name, "helm-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "HelmRelease "+o.namespace+"/"+name)
	}
	switch err := c.dynamic.Resource(ociRepositoriesGVR).Namespace(o.namespace).Delete(ctx, name, metav1.DeleteOptions{}); {
	case err == nil:
		if err := o.waitGone(ctx, c, ociRepositoriesGVR, name, "source-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "OCIRepository "+o.namespace+"/"+name)
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("delete OCIRepository %s/%s: %w", o.namespace, name, err)
	}
	// The values Secret: the one the HelmRelease names, or, without it, the default one if
	// "self resume" wrote it (it carries the self label).
	secrets := c.kube.CoreV1().Secrets(o.namespace)
	if s, err := secrets.Get(ctx, secret, metav1.GetOptions{}); err == nil && (hr != nil || s.Labels[transform.SelfLabel] == "true") {
		if err := secrets.Delete(ctx, secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete values Secret %s/%s: %w", o.namespace, secret, err)
		}
		removed = append(removed, "Secret "+o.namespace+"/"+secret)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("values Secret %s/%s: %w", o.namespace, secret, err)
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
		return "", fmt.Errorf("no HelmRelease %s/%s, OCIRepository or CLI guard of release %s: the CLI owns the release already", o.namespace, name, name)
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
