// Package selfmanaged is the vocabulary of self-management shared by the render that writes
// the self-managing pair and its CLI guard (internal/transform) and the lifecycle that hands the
// release over, reports on it and takes it back (internal/action): the labels and annotations
// they mark and find objects by, the guard's names and actions, the ways the bracket ends.
package selfmanaged

// The ways the bracket ends.
const (
	// BracketCLI: a user runs `helm drift self resume`.
	BracketCLI = "cli"
	// BracketJob: the detached resumer Job in the manifest.
	BracketJob = "job"
	// BracketHooks: asked for as Helm 4 hooks; rendered as the detached resumer, because a
	// post-install hook runs while the revision is still pending (two writers).
	BracketHooks = "hooks"
)

// DefaultControllerIdentity is the user name of helm-controller as Flux installs it.
const DefaultControllerIdentity = "system:serviceaccount:flux-system:helm-controller"

// SelfLabel marks the pair, for `helm drift self` to find.
const SelfLabel = "helm-drift.io/self"

// Helm's resource policy: an object annotated keep outlives the uninstall and the upgrade that
// drops it from the manifest.
const (
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	KeepPolicy               = "keep"
)

// GuardName is the name of the guard's policy and binding for a release (cluster-scoped).
func GuardName(namespace, release string) string {
	return "helm-drift-self." + namespace + "." + release
}

// GuardBinding is one binding of the CLI guard's policy and the validation action it has once
// the guard is armed.
type GuardBinding struct {
	Name, Armed string
}

// GuardBindings are the bindings of the CLI guard of a release: one that denies and one that
// repeats each refusal as a warning (Helm prints warnings; for the uninstall it reports only
// "failed to delete release").
func GuardBindings(namespace, release string) []GuardBinding {
	name := GuardName(namespace, release)
	return []GuardBinding{{Name: name, Armed: "Deny"}, {Name: name + ".warn", Armed: "Warn"}}
}

// GuardDisarmed is the validation action of the guard's bindings until the hand-over: the
// policy is evaluated and its would-be refusals only recorded in the audit log, so that the
// Helm CLI still writes, rolls back and uninstalls the release.
const GuardDisarmed = "Audit"

// AllowCLIAnnotation on a namespace ("true") lets the Helm CLI write self-managed releases
// there despite the guard.
const AllowCLIAnnotation = "helm-drift.io/allow-cli-writes"

// ResumerLabel marks the resumer Job and its RBAC with the release they resume.
const ResumerLabel = "helm-drift.io/resumer"
