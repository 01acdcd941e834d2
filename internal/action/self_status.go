package action

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

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
	st := &SelfStatus{ReleaseErr: relErr, Gone: errors.Is(relErr, driver.ErrReleaseNotFound), GuardName: selfmanaged.GuardName(s.Namespace, name), HelmRelease: hr != nil}
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
	guard := selfmanaged.GuardName(s.Namespace, name)
	if _, err := adm.ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return GuardAbsent, nil
	} else if err != nil {
		return "", err
	}
	bindings := selfmanaged.GuardBindings(s.Namespace, name)
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
