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

Usage:
  helm drift self resume RELEASE [-n NAMESPACE] [--timeout 300s] [--force]
      Ends the suspend bracket: waits until the release is deployed (still pending after
      --timeout: exit 1, nothing resumed; failed: exit 1 unless --force), writes the release's
      user-supplied values (never the merged tree) into the values Secret by server-side apply,
      labelled reconcile.fluxcd.io/watch: Enabled, then resumes the HelmRelease and requests a
      reconcile. A second run changes nothing.
  helm drift self status RELEASE [-n NAMESPACE]
      Who writes the release now: the CLI (no HelmRelease, or suspended), helm-controller, or
      both (a warning); revision, chart version, range, whether the CLI guard is on, last
      reconcile. A release uninstalled with its pair left active is a warning: helm-controller
      will install it again.
  helm drift self handback RELEASE [-n NAMESPACE]
      Suspends the HelmRelease, lifts the CLI guard (ValidatingAdmissionPolicy and bindings),
      then removes the HelmRelease, its OCIRepository and the values Secret, leaving the
      release installed and owned by the CLI.
  helm drift self uninstall RELEASE [-n NAMESPACE] [--no-hooks]
      Removes the pair, the values Secret and the CLI guard (as handback), then uninstalls the
      release. Use it instead of helm uninstall: with the guard on, helm uninstall is refused
      before it deletes anything; without it, helm uninstall leaves the pair
      (helm.sh/resource-policy: keep), and an active HelmRelease installs the release again.
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
	suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	if !suspended && !secretChanged {
		fmt.Fprintf(out, "HelmRelease %s/%s already resumed and values Secret %s up to date (revision %d): nothing to do\n", o.namespace, name, secret, rel.Version)
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"reconcile.fluxcd.io/requestedAt": time.Now().UTC().Format(time.RFC3339Nano)}}}
	if suspended {
		patch["spec"] = map[string]any{"suspend": false}
	}
	body, _ := json.Marshal(patch)
	if _, err := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
		return fmt.Errorf("resume HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	fmt.Fprintf(out, "release %s/%s revision %d is %s; its user-supplied values (%s) written to Secret %s\n", o.namespace, name, rel.Version, rel.Info.Status, plural(len(values), "top-level key"), secret)
	if suspended {
		fmt.Fprintf(out, "HelmRelease %s/%s resumed and reconcile requested: helm-controller writes the release from now on\n", o.namespace, name)
	} else {
		fmt.Fprintf(out, "HelmRelease %s/%s was active; reconcile requested for the new values\n", o.namespace, name)
	}
	return nil
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
			return nil, fmt.Errorf("release %s/%s revision %d failed (%s): nothing resumed; fix it, or resume anyway with --force", o.namespace, name, rel.Version, rel.Info.Description)
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

// status says who writes the release now.
func (o *selfOptions) status(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	rel, relErr := action.NewStatus(c.helm).Run(name)
	hr, err := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hr = nil
	case err != nil:
		return fmt.Errorf("HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	if relErr != nil {
		fmt.Fprintf(out, "release:   %s/%s: %v\n", o.namespace, name, relErr)
	} else {
		fmt.Fprintf(out, "release:   %s/%s revision %d, %s, chart %s-%s\n", o.namespace, name, rel.Version, rel.Info.Status, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version)
	}
	if hr == nil {
		fmt.Fprintf(out, "writer:    the Helm CLI (no HelmRelease %s/%s)\n", o.namespace, name)
		return nil
	}
	suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
	history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	var hcRevision int64
	if len(history) > 0 {
		hcRevision, _, _ = unstructured.NestedInt64(history[0].(map[string]any), "version")
	}
	if repo, err := c.dynamic.Resource(ociRepositoriesGVR).Namespace(o.namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		rng, _, _ := unstructured.NestedString(repo.Object, "spec", "ref", "semver")
		url, _, _ := unstructured.NestedString(repo.Object, "spec", "url")
		fmt.Fprintf(out, "source:    %s, range %s\n", url, rng)
	}
	guard := transform.GuardName(o.namespace, name)
	switch _, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); {
	case err == nil:
		fmt.Fprintf(out, "guard:     on (ValidatingAdmissionPolicy %s): the Helm CLI may not upgrade, roll back or uninstall the release\n", guard)
	case apierrors.IsNotFound(err):
		fmt.Fprintf(out, "guard:     off: nothing keeps the Helm CLI from writing or uninstalling the release\n")
	default:
		fmt.Fprintf(out, "guard:     unknown: %v\n", err)
	}
	handled, _, _ := unstructured.NestedString(hr.Object, "status", "lastHandledReconcileAt")
	fmt.Fprintf(out, "reconcile: last handled %s; Ready=%s\n", orNone(handled), conditionStatus(hr, "Ready"))
	gone := errors.Is(relErr, driver.ErrReleaseNotFound)
	switch {
	case gone && !suspended:
		fmt.Fprintf(out, "writer:    warning: the release is gone but HelmRelease %s/%s is active: helm-controller will install it again at its next reconcile (the pair outlives \"helm uninstall\": helm.sh/resource-policy keep); to leave it uninstalled run \"helm drift self handback %s -n %s\"\n", o.namespace, name, name, o.namespace)
	case gone:
		fmt.Fprintf(out, "writer:    nobody: the release is gone and HelmRelease %s/%s is suspended (nothing installs it); \"helm drift self handback %s -n %s\" removes the pair\n", o.namespace, name, name, o.namespace)
	case suspended:
		fmt.Fprintf(out, "writer:    the Helm CLI (HelmRelease suspended: the bracket is open; end it with \"helm drift self resume %s -n %s\")\n", name, o.namespace)
	case relErr == nil && hcRevision != 0 && int64(rel.Version) > hcRevision:
		fmt.Fprintf(out, "writer:    BOTH: warning: revision %d was written after helm-controller's revision %d while the HelmRelease is active; upgrade through Flux (push a chart version), or hand back first\n", rel.Version, hcRevision)
	default:
		fmt.Fprintf(out, "writer:    helm-controller (HelmRelease active; its last revision %d)\n", hcRevision)
	}
	return nil
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

// handback suspends the HelmRelease and removes the pair and the values Secret.
func (o *selfOptions) handback(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	secret, err := o.removePair(ctx, c, name)
	if err != nil {
		return err
	}
	if _, err := action.NewStatus(c.helm).Run(name); errors.Is(err, driver.ErrReleaseNotFound) {
		fmt.Fprintf(out, "HelmRelease, OCIRepository %s/%s, Secret %s and the CLI guard removed; release %s/%s is not installed, and nothing will install it again\n", o.namespace, name, secret, o.namespace, name)
		return nil
	}
	fmt.Fprintf(out, "HelmRelease, OCIRepository %s/%s, Secret %s and the CLI guard removed; release %s/%s stays installed and the Helm CLI owns it again\n", o.namespace, name, secret, o.namespace, name)
	return nil
}

// uninstall removes the pair first, then uninstalls the release: "helm uninstall" alone leaves
// the pair (helm.sh/resource-policy: keep), and an active HelmRelease would install the release
// again. The release must exist: nothing is removed otherwise.
func (o *selfOptions) uninstall(ctx context.Context, c *selfClients, name string, out io.Writer) error {
	if _, err := action.NewStatus(c.helm).Run(name); err != nil {
		return releaseError(o.namespace, name, err)
	}
	secret, err := o.removePair(ctx, c, name)
	if err != nil {
		return err
	}
	un := action.NewUninstall(c.helm)
	un.DisableHooks, un.Timeout = o.noHooks, o.timeout
	res, err := un.Run(name)
	if err != nil {
		return fmt.Errorf("the pair is removed, but uninstalling release %s/%s failed (run helm uninstall %s -n %s): %w", o.namespace, name, name, o.namespace, err)
	}
	fmt.Fprintf(out, "HelmRelease, OCIRepository %s/%s, Secret %s and the CLI guard removed; release %s/%s uninstalled", o.namespace, name, secret, o.namespace, name)
	if res != nil && res.Info != "" {
		fmt.Fprintf(out, " (%s)", strings.TrimSpace(res.Info))
	}
	fmt.Fprintln(out, ": nothing will install it again")
	return nil
}

// removePair suspends the HelmRelease, lifts the CLI guard, then deletes the HelmRelease, its
// OCIRepository and the values Secret, waiting for each to be gone; it returns the values
// Secret's name.
func (o *selfOptions) removePair(ctx context.Context, c *selfClients, name string) (string, error) {
	hrs := c.dynamic.Resource(helmReleasesGVR).Namespace(o.namespace)
	hr, err := hrs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("no HelmRelease %s/%s: the CLI owns the release already", o.namespace, name)
	}
	if err != nil {
		return "", err
	}
	secret := valuesSecretOf(hr, name)
	// Suspended first: helm-controller does not uninstall a suspended HelmRelease it deletes.
	if _, err := hrs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
		return "", fmt.Errorf("suspend HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	// Then the CLI guard, which refuses the CLI's deletes of the release's objects (the pair is
	// one of them); with the HelmRelease suspended, nobody writes the release meanwhile.
	guard := transform.GuardName(o.namespace, name)
	for _, binding := range []string{guard, guard + ".warn"} {
		if err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, binding, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s (the CLI guard): %w", binding, err)
		}
	}
	if err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, guard, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete ValidatingAdmissionPolicy %s (the CLI guard): %w", guard, err)
	}
	if err := o.waitGuardLifted(ctx, c, name); err != nil {
		return "", err
	}
	if err := hrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete HelmRelease %s/%s: %w", o.namespace, name, err)
	}
	if err := o.waitGone(ctx, c, helmReleasesGVR, name, "helm-controller"); err != nil {
		return "", err
	}
	if err := c.dynamic.Resource(ociRepositoriesGVR).Namespace(o.namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete OCIRepository %s/%s: %w", o.namespace, name, err)
	}
	if err := o.waitGone(ctx, c, ociRepositoriesGVR, name, "source-controller"); err != nil {
		return "", err
	}
	if err := c.kube.CoreV1().Secrets(o.namespace).Delete(ctx, secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete values Secret %s/%s: %w", o.namespace, secret, err)
	}
	return secret, nil
}
