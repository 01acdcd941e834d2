package transform

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Self appends the self-management pair for the release being installed: an OCIRepository
// for the release's own chart and a HelmRelease that writes the very same Helm release, so
// that helm-controller adopts it after a CLI install and rolls it forward inside its major
// version.
//
// Until helm-controller has adopted the release (Adopted false: an install, or a release whose
// HelmRelease is absent or still suspended), the pair and the CLI guard are ordinary objects of
// the release: no helm.sh/resource-policy: keep, and the guard's bindings only audit. Every Helm
// recovery path works then: a failed --atomic install removes them with everything else, and so
// does helm uninstall. The hand-over ("helm drift self resume", or the resumer Job) arms the
// guard and marks the live objects keep before it resumes the HelmRelease, because
// helm-controller renders the chart without this post-renderer and must not delete them on its
// first upgrade (Helm's upgrade reads the live object's resource policy; its uninstall reads
// the stored manifest's). A render for a release helm-controller already writes (Adopted true)
// renders that armed state, so that a CLI write cannot disarm it.
type Self struct {
	// Release and Namespace are the CLI release's.
	Release, Namespace string
	// Repository is the OCI repository the chart is pushed to (oci://host/path).
	Repository string
	// ChartName and ChartVersion; empty: read from the rendered helm.sh/chart labels.
	ChartName, ChartVersion string
	// VersionRange is the OCIRepository's semver range; empty: >=ChartVersion <next major.
	VersionRange string
	// Interval of both objects (default 10m).
	Interval string
	// ServiceAccount helm-controller impersonates; empty: none.
	ServiceAccount string
	// ValuesSecret holds the release's user-supplied values (default <release>-values).
	ValuesSecret string
	// Insecure: the registry speaks plain HTTP.
	Insecure bool
	// Suspend renders the HelmRelease suspended: the bracket, ended by `helm drift self resume`.
	Suspend bool
	// Adopted: helm-controller writes the release already (its HelmRelease exists and is
	// active). The pair and the guard are then rendered as the hand-over left them: kept
	// (helm.sh/resource-policy: keep) and the guard armed.
	Adopted bool
	// Drift, when set, has its decisions carried into the HelmRelease as postRenderers, so
	// helm-controller's own upgrades keep them.
	Drift *DriftDetection
	// HookImage is the image with helm-drift on its PATH that the resumer Job runs.
	HookImage string
	// Bracket is how the bracket ends: BracketCLI (or ""), BracketJob or BracketHooks; the
	// last two render the detached resumer Job from HookImage.
	Bracket string
	// ResumerTimeout is how long the resumer Job waits for the revision to be deployed before
	// it gives up without resuming (default 10m).
	ResumerTimeout string
	// Guard renders the CLI guard: a ValidatingAdmissionPolicy and its binding that deny the
	// creation of the release's storage Secrets to anyone but the identity helm-controller
	// writes the release as, so that after the bracket the Helm CLI cannot write a revision
	// helm-controller did not make.
	Guard bool
	// ControllerIdentity is helm-controller's own user name, the writer when ServiceAccount is
	// empty (default system:serviceaccount:flux-system:helm-controller).
	ControllerIdentity string
}

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

// AllowCLIAnnotation on a namespace ("true") lets the Helm CLI write self-managed releases
// there despite the guard.
const AllowCLIAnnotation = "helm-drift.io/allow-cli-writes"

// DefaultControllerIdentity is the user name of helm-controller as Flux installs it.
const DefaultControllerIdentity = "system:serviceaccount:flux-system:helm-controller"

// Writer is the user name helm-controller writes the release as: the ServiceAccount it
// impersonates (spec.serviceAccountName, in the HelmRelease's namespace), else its own.
func (s *Self) Writer() string {
	if s.ServiceAccount != "" {
		return "system:serviceaccount:" + s.Namespace + ":" + s.ServiceAccount
	}
	if s.ControllerIdentity != "" {
		return s.ControllerIdentity
	}
	return DefaultControllerIdentity
}

// GuardName is the name of the guard's policy and binding for a release (cluster-scoped).
func GuardName(namespace, release string) string {
	return "helm-drift-self." + namespace + "." + release
}

var _ Transform = (*Self)(nil)

// SelfLabel marks the pair, for `helm drift self` to find.
const SelfLabel = "helm-drift.io/self"

// Validate checks the settings before any stream is read.
func (s *Self) Validate() error {
	var missing []string
	if s.Release == "" {
		missing = append(missing, "--release")
	}
	if s.Namespace == "" {
		missing = append(missing, "--namespace")
	}
	if s.Repository == "" {
		missing = append(missing, "--self-repository")
	}
	if len(missing) > 0 {
		return fmt.Errorf("--self needs %s: the pair must write exactly the release being installed, from the repository its chart is pushed to", strings.Join(missing, ", "))
	}
	if !strings.HasPrefix(s.Repository, "oci://") || strings.TrimPrefix(s.Repository, "oci://") == "" {
		return fmt.Errorf("--self-repository %q: want an OCI repository, oci://host/path", s.Repository)
	}
	if s.Interval != "" {
		if d, err := time.ParseDuration(s.Interval); err != nil || d <= 0 {
			return fmt.Errorf("--self-interval %q: want a positive duration such as 10m", s.Interval)
		}
	}
	if s.VersionRange != "" {
		if _, err := semver.NewConstraint(s.VersionRange); err != nil {
			return fmt.Errorf("--self-version-range %q does not parse: %v", s.VersionRange, err)
		}
	}
	if s.ChartVersion != "" {
		if _, err := semver.StrictNewVersion(s.ChartVersion); err != nil {
			return fmt.Errorf("--chart-version %q is not a semantic version: %v", s.ChartVersion, err)
		}
	}
	return nil
}

// Transform appends the OCIRepository and the HelmRelease.
func (s *Self) Transform(st *manifest.Stream) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Bracket == BracketHooks && !fromHelm4(st) {
		return errors.New("--self-bracket hooks: Helm 3 never hands hooks to a post-renderer (this stream did not come through Helm 4's: no document carries " + manifest.FilenameAnnotation +
			"): use --self-bracket job, the detached resumer Job that waits for the revision to be deployed (Helm 3 and Helm 4), or --self-bracket cli and run \"helm drift self resume RELEASE\" once the install is deployed")
	}
	name, version := s.ChartName, s.ChartVersion
	if name == "" || version == "" {
		n, v, err := chartFromLabels(st)
		if err != nil {
			return err
		}
		if name == "" {
			name = n
		}
		if version == "" {
			version = v
		}
	}
	rng := s.VersionRange
	if rng == "" {
		v, err := semver.StrictNewVersion(version)
		if err != nil {
			return fmt.Errorf("chart version %q is not a semantic version, so no range can be derived from it; give --self-version-range", version)
		}
		rng = fmt.Sprintf(">=%s <%d.0.0", v.Original(), v.Major()+1)
	}
	interval := s.Interval
	if interval == "" {
		interval = "10m"
	}
	secret := s.ValuesSecret
	if secret == "" {
		secret = s.Release + "-values"
	}
	meta := map[string]any{
		"name": s.Release, "namespace": s.Namespace,
		"labels": map[string]any{SelfLabel: "true"},
	}
	if s.Adopted {
		meta["annotations"] = map[string]any{ResourcePolicyAnnotation: KeepPolicy}
	}
	repoSpec := map[string]any{
		"interval": interval,
		"url":      strings.TrimSuffix(s.Repository, "/") + "/" + name,
		"ref":      map[string]any{"semver": rng},
		"layerSelector": map[string]any{
			"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
			"operation": "copy",
		},
	}
	if s.Insecure {
		repoSpec["insecure"] = true
	}
	hrSpec := map[string]any{
		"interval":         interval,
		"releaseName":      s.Release,
		"targetNamespace":  s.Namespace,
		"storageNamespace": s.Namespace,
		"chartRef":         map[string]any{"kind": "OCIRepository", "name": s.Release},
		"install":          map[string]any{"disableWait": true},
		"upgrade":          map[string]any{"disableWait": true},
		"valuesFrom":       []any{map[string]any{"kind": "Secret", "name": secret, "valuesKey": "values.yaml"}},
	}
	if s.Suspend {
		hrSpec["suspend"] = true
	}
	if s.ServiceAccount != "" {
		hrSpec["serviceAccountName"] = s.ServiceAccount
	}
	if pr := s.postRenderers(); pr != nil {
		hrSpec["postRenderers"] = pr
	}
	objs := []map[string]any{
		{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository", "metadata": meta, "spec": repoSpec},
		{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": meta, "spec": hrSpec},
	}
	if s.Guard {
		objs = append(objs, s.guard(secret)...)
	}
	if s.Bracket == BracketJob || s.Bracket == BracketHooks {
		objs = append(objs, s.resumer(secret)...)
	}
	for _, obj := range objs {
		data, err := sigsyaml.Marshal(obj)
		if err != nil {
			return err
		}
		st.Append(append([]byte("# Source: helm-drift/self.yaml\n"), data...), "helm-drift self")
	}
	return nil
}

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
		return map[string]any{"name": name, "namespace": s.Namespace, "labels": map[string]any{SelfLabel: "true", ResumerLabel: s.Release}}
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
		guard := GuardName(s.Namespace, s.Release)
		crMeta := map[string]any{"name": guard + ".resumer", "labels": map[string]any{SelfLabel: "true", ResumerLabel: s.Release}}
		var bindings []any
		for _, b := range GuardBindings(s.Namespace, s.Release) {
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
			"metadata": map[string]any{"labels": map[string]any{ResumerLabel: s.Release}},
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

// ResumerLabel marks the resumer Job and its RBAC with the release they resume.
const ResumerLabel = "helm-drift.io/resumer"

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

// postRenderers turns the drift detection decisions into Flux kustomize patches.
func (s *Self) postRenderers() []any {
	if s.Drift == nil || len(s.Drift.Applied) == 0 {
		return nil
	}
	var patches []any
	for _, a := range s.Drift.Applied {
		value := map[string]any{"mode": string(a.Mode)}
		if len(a.Ignore) > 0 {
			value["ignore"] = a.Ignore
		}
		patch, _ := sigsyaml.Marshal([]any{map[string]any{"op": "add", "path": "/spec/driftDetection", "value": value}})
		target := map[string]any{"group": flux.HelmReleaseGroup, "kind": "HelmRelease", "name": a.Name}
		if a.Namespace != "" {
			target["namespace"] = a.Namespace
		}
		patches = append(patches, map[string]any{"target": target, "patch": string(patch)})
	}
	return []any{map[string]any{"kustomize": map[string]any{"patches": patches}}}
}

// fromHelm4 reports whether the stream came through Helm 4's post-renderer, which annotates
// every document with the template it came from (and hands hooks over too).
func fromHelm4(st *manifest.Stream) bool {
	for _, d := range st.Docs {
		if d.Contains([]byte(manifest.FilenameAnnotation)) {
			return true
		}
	}
	return false
}

// chartFromLabels reads the chart's name and version from the helm.sh/chart labels
// (name-version) of the rendered objects; several different ones are ambiguous.
func chartFromLabels(st *manifest.Stream) (string, string, error) {
	seen := map[string]bool{}
	for _, d := range st.Docs {
		if !d.Contains([]byte("helm.sh/chart")) {
			continue
		}
		root, err := d.Node()
		if err != nil {
			return "", "", err
		}
		if root == nil || root.YNode().Kind != yaml.MappingNode {
			continue
		}
		for _, o := range manifest.Items(root.YNode()) {
			if v := manifest.StringMap(manifest.Lookup(manifest.Lookup(o.Node, "metadata"), "labels"))["helm.sh/chart"]; v != "" {
				seen[v] = true
			}
		}
	}
	if len(seen) == 0 {
		return "", "", errors.New("--self: no helm.sh/chart label in the rendered objects to read the chart's name and version from; give --chart-name and --chart-version")
	}
	var labels []string
	for l := range seen {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	if len(labels) > 1 {
		return "", "", fmt.Errorf("--self: the rendered objects carry several helm.sh/chart labels (%s), so the chart is ambiguous; give --chart-name and --chart-version", strings.Join(labels, ", "))
	}
	name, version, ok := splitChartLabel(labels[0])
	if !ok {
		return "", "", fmt.Errorf("--self: helm.sh/chart label %q is not NAME-VERSION; give --chart-name and --chart-version", labels[0])
	}
	return name, version, nil
}

// splitChartLabel splits "name-1.2.3-rc.1" at the first "-" after which a semantic version
// follows. Helm writes "+" in versions as "_" in labels.
func splitChartLabel(l string) (string, string, bool) {
	for i := 0; i < len(l); i++ {
		if l[i] != '-' || i == 0 {
			continue
		}
		v := strings.ReplaceAll(l[i+1:], "_", "+")
		if _, err := semver.StrictNewVersion(v); err == nil {
			return l[:i], v, true
		}
	}
	return "", "", false
}

// guard renders the ValidatingAdmissionPolicy and its bindings that make the Helm CLI day-0 only
// for this release once helm-controller has adopted it. Until the hand-over arms it (Adopted
// false), its bindings only audit: the install, a failed install's --atomic uninstall, a
// helm uninstall, upgrade or rollback of a release not yet handed over all pass, and nothing is
// kept, so no failure before the hand-over leaves a release that neither Helm nor
// helm-controller can finish or remove. Armed, anyone but helm-controller's writer (or, for a
// namespaced object, anyone while the namespace carries AllowCLIAnnotation) is refused:
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
	name := GuardName(s.Namespace, s.Release)
	meta := func(name string) map[string]any {
		m := map[string]any{"name": name, "labels": map[string]any{SelfLabel: "true"}}
		if s.Adopted {
			m["annotations"] = map[string]any{ResourcePolicyAnnotation: KeepPolicy}
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
		s.Writer(), AllowCLIAnnotation)
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
	for _, b := range GuardBindings(s.Namespace, s.Release) {
		action := GuardDisarmed
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

// Helm's resource policy: an object annotated keep outlives the uninstall and the upgrade that
// drops it from the manifest.
const (
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	KeepPolicy               = "keep"
)
