package transform

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
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
	// Bracket is how the bracket ends: selfmanaged.BracketCLI (or ""), selfmanaged.BracketJob or selfmanaged.BracketHooks; the
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

// Writer is the user name helm-controller writes the release as: the ServiceAccount it
// impersonates (spec.serviceAccountName, in the HelmRelease's namespace), else its own.
func (s *Self) Writer() string {
	if s.ServiceAccount != "" {
		return "system:serviceaccount:" + s.Namespace + ":" + s.ServiceAccount
	}
	if s.ControllerIdentity != "" {
		return s.ControllerIdentity
	}
	return selfmanaged.DefaultControllerIdentity
}

var _ Transform = (*Self)(nil)

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
	if s.Bracket == selfmanaged.BracketHooks && !fromHelm4(st) {
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
		"labels": map[string]any{selfmanaged.SelfLabel: "true"},
	}
	if s.Adopted {
		meta["annotations"] = map[string]any{selfmanaged.ResourcePolicyAnnotation: selfmanaged.KeepPolicy}
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
	if s.Bracket == selfmanaged.BracketJob || s.Bracket == selfmanaged.BracketHooks {
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
