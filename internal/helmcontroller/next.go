package helmcontroller

import (
	"fmt"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/opencontainers/go-digest"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// NextReconcile says what helm-controller's next reconcile will do with the HelmRelease, given
// the release's last revision in storage (nil: none) and what it would render now. It follows
// helm-controller's own decision: suspended → nothing; no release → install; a pending one is
// unlocked first, a failed one remediated (neither is predicted); a release this HelmRelease
// did not write, a chart name or version that differs from the stored release's, values whose
// digest differs from the last snapshot's, or (for a new generation) changed post-renderers or
// common metadata → upgrade; else drift detection decides: enabled → correction, warn or off
// → nothing. Condition messages are never quoted (they may hold a template error's values).
// xref: helm-controller internal/reconcile/state.go DetermineReleaseState; internal/action/
// verify.go VerifyRelease; internal/reconcile/atomic_release.go actionForState.
func NextReconcile(hr *v2.HelmRelease, last *release4.Release, r *Rendered) flux.Next {
	if hr.Spec.Suspend {
		return flux.Next{Action: flux.NextNothing, Reason: "spec.suspend is true: helm-controller does not reconcile it"}
	}
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, "Stalled"); c != nil && c.Status == "True" {
		return flux.Next{Action: flux.NextNothing, Reason: "the HelmRelease is stalled (" + c.Reason + "): helm-controller retries nothing until its spec changes"}
	}
	if last == nil || last.Info == nil || last.Info.Status.String() == "uninstalled" {
		return flux.Next{Action: flux.NextInstall, Reason: "no release " + r.Storage + "/" + r.Name + " in storage"}
	}
	if last.Info.Status.IsPending() {
		return flux.Next{Action: flux.NextNothing, Reason: fmt.Sprintf("release revision %d is %s: helm-controller first unlocks it (marks it failed), then remediates; nothing is predicted", last.Version, last.Info.Status)}
	}
	cur := hr.Status.History.Latest()
	if cur == nil || !cur.Targets(last.Name, last.Namespace, last.Version) {
		return flux.Next{Action: flux.NextUpgrade, Reason: fmt.Sprintf("release revision %d was not written by this HelmRelease (no matching status.history entry): helm-controller upgrades to take it over", last.Version)}
	}
	if last.Info.Status.String() == "failed" {
		return flux.Next{Action: flux.NextNothing, Reason: fmt.Sprintf("release revision %d failed: helm-controller remediates it as spec.install/upgrade.remediation say (retry or roll back); nothing is predicted", last.Version)}
	}
	if why := changedInputs(hr, cur, last, r); why != "" {
		return flux.Next{Action: flux.NextUpgrade, Reason: why}
	}
	switch hr.GetDriftDetection().GetMode() {
	case v2.DriftDetectionEnabled:
		return flux.Next{Action: flux.NextCorrect, Reason: "in sync with its spec, and spec.driftDetection.mode is enabled: helm-controller restores what the stored manifest states"}
	case v2.DriftDetectionWarn:
		return flux.Next{Action: flux.NextNothing, Reason: "in sync with its spec, and spec.driftDetection.mode is warn: helm-controller reports drift and corrects nothing"}
	}
	return flux.Next{Action: flux.NextNothing, Reason: "in sync with its spec, and drift detection is disabled: helm-controller does not look at the cluster between upgrades"}
}

// changedInputs says which of the render's inputs differ from those of the last release this
// HelmRelease wrote (cur, its status.history entry): the chart's name or version, the values'
// digest, or (for a new generation) the post-renderers or common metadata; "" when none does.
func changedInputs(hr *v2.HelmRelease, cur *v2.Snapshot, last *release4.Release, r *Rendered) string {
	if last.Chart != nil && last.Chart.Metadata != nil && (last.Chart.Metadata.Name != r.Chart.Metadata.Name || last.Chart.Metadata.Version != r.Chart.Metadata.Version) {
		return fmt.Sprintf("chart %s-%s → %s-%s", last.Chart.Metadata.Name, last.Chart.Metadata.Version, r.Chart.Metadata.Name, r.Chart.Metadata.Version)
	}
	if !chartutil.VerifyValues(digest.Digest(cur.ConfigDigest), r.values) {
		return "the values changed (their digest differs from the last release's)"
	}
	if hr.Status.ObservedGeneration != hr.Generation {
		if PostRenderersDigest(hr) != hr.Status.ObservedPostRenderersDigest {
			return "spec.postRenderers changed"
		}
		if CommonMetadataDigest(hr) != hr.Status.ObservedCommonMetadataDigest {
			return "spec.commonMetadata changed"
		}
	}
	return ""
}

// SameInputs reports whether r was rendered from the inputs of the last release this
// HelmRelease wrote (the chart version, as helm-controller versions it with the artifact's
// digest, the values, the post-renderers and common metadata): a field it renders otherwise
// than that release is one the chart renders differently each time or once its objects exist.
func SameInputs(hr *v2.HelmRelease, last *release4.Release, r *Rendered) bool {
	if last == nil || last.Info == nil {
		return false
	}
	cur := hr.Status.History.Latest()
	if cur == nil || !cur.Targets(last.Name, last.Namespace, last.Version) {
		return false
	}
	return changedInputs(hr, cur, last, r) == ""
}
