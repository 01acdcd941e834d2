package transform

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// DriftDetection sets spec.driftDetection on the Flux HelmReleases its rules select. Nothing is
// selected by default: a HelmRelease no rule matches is left as the chart wrote it.
type DriftDetection struct {
	// Rules in rising priority: for each setting (mode, ignore, override) the last matching
	// rule that makes it wins. Config file rules come first, flag rules after them.
	Rules []Rule
	// Namespace is the namespace of a HelmRelease whose metadata names none: the release's.
	Namespace string
	// Strict makes a rule that matches no HelmRelease an error instead of a warning.
	Strict bool
	// Verbose logs one line per decision.
	Verbose bool
	// Log receives warnings and verbose lines; nil discards them.
	Log io.Writer
	// IgnoreFrom, when set, is asked for more ignore rules for each HelmRelease whose drift
	// detection the transform switches on (render --ignore-from-cluster): they are added after
	// the rules' own, each note logged as a warning. An error is a warning too, and adds
	// nothing: the render never fails on it.
	IgnoreFrom func(hr HelmReleaseRef) (rules []flux.IgnoreRule, notes []string, err error)

	// Applied records, after Transform, what was set on which HelmRelease.
	Applied []Applied
}

// Applied is one HelmRelease whose spec.driftDetection a transform set.
type Applied struct {
	// Namespace as the document writes it (empty when it names none), and Name.
	Namespace, Name string
	// Mode and Ignore are what was set.
	Mode   flux.Mode
	Ignore []flux.IgnoreRule
}

// HelmReleaseRef is a HelmRelease of the stream as IgnoreFrom needs it: where its release is.
type HelmReleaseRef struct {
	// Namespace and Name are the HelmRelease's; ReleaseName, TargetNamespace and
	// StorageNamespace its spec's (empty where it sets none).
	Namespace, Name, ReleaseName, TargetNamespace, StorageNamespace string
}

var _ Transform = (*DriftDetection)(nil)

// decision is what the matching rules decided for one HelmRelease.
type decision struct {
	mode     flux.Mode
	ignore   []flux.IgnoreRule
	override bool
	origins  []string
}

// driftDetectionSpec is the value written as spec.driftDetection.
type driftDetectionSpec struct {
	Mode   flux.Mode         `yaml:"mode"`
	Ignore []flux.IgnoreRule `yaml:"ignore,omitempty"`
}

var helmReleaseBytes = []byte("HelmRelease")

// Transform applies the rules to every HelmRelease in the stream, in place.
func (f *DriftDetection) Transform(s *manifest.Stream) error {
	if len(f.Rules) == 0 {
		return nil
	}
	matched := make([]int, len(f.Rules))
	for _, d := range s.Docs {
		if !d.Contains(helmReleaseBytes) {
			continue // cannot be a HelmRelease: never parsed, comes back byte-for-byte
		}
		root, err := d.Node()
		if err != nil {
			return err
		}
		if root == nil || root.YNode().Kind != yaml.MappingNode {
			continue
		}
		changed := false
		for _, obj := range manifest.Items(root.YNode()) {
			c, err := f.apply(d, obj, matched)
			if err != nil {
				return err
			}
			changed = changed || c
		}
		if changed {
			d.MarkChanged()
		}
	}
	for i, r := range f.Rules {
		if matched[i] > 0 {
			continue
		}
		if f.Strict {
			return fmt.Errorf("%s matched no HelmRelease (%s); check the selector, or drop --strict", r.Origin, flux.HelmReleaseGroup)
		}
		f.logf("warning: %s matched no HelmRelease\n", r.Origin)
	}
	return nil
}

// apply decides for one object and sets its driftDetection; it reports whether it changed it.
func (f *DriftDetection) apply(d *manifest.Document, o manifest.Item, matched []int) (bool, error) {
	obj := o.Node
	if manifest.Deref(obj) == nil || manifest.Deref(obj).Kind != yaml.MappingNode || manifest.Scalar(obj, "kind") != "HelmRelease" {
		return false, nil
	}
	group, version, _ := strings.Cut(manifest.Scalar(obj, "apiVersion"), "/")
	if group != flux.HelmReleaseGroup {
		return false, nil // another project's HelmRelease kind
	}
	meta := manifest.Lookup(obj, "metadata")
	name := manifest.Scalar(meta, "name")
	namespace := manifest.Scalar(meta, "namespace")
	if namespace == "" {
		namespace = f.Namespace
	}
	dec, ok := f.decide(namespace, name, manifest.StringMap(manifest.Lookup(meta, "labels")), matched)
	if !ok {
		return false, nil
	}
	where := d.Name()
	if o.Item >= 0 {
		where += fmt.Sprintf(", List item %d", o.Item+1)
	}
	where += fmt.Sprintf(", HelmRelease %s/%s", namespace, name)
	switch version {
	case "v2", "v2beta2":
	case "v2beta1":
		return false, fmt.Errorf("%s: selected by %s, but %s/v2beta1 has no spec.driftDetection (it came with v2beta2); move the chart's HelmRelease to %s/v2 or drop it from the rule", where, strings.Join(dec.origins, ", "), flux.HelmReleaseGroup, flux.HelmReleaseGroup)
	default:
		return false, fmt.Errorf("%s: selected by %s, but apiVersion %s/%s is not one this helm-drift knows (v2, v2beta2); check the apiVersion", where, strings.Join(dec.origins, ", "), flux.HelmReleaseGroup, version)
	}
	spec := manifest.Lookup(obj, "spec")
	switch {
	case spec == nil:
		return false, fmt.Errorf("%s: has no spec; a HelmRelease needs one", where)
	case spec.Kind == yaml.AliasNode:
		return false, fmt.Errorf("%s: spec is a YAML alias (*%s): editing it would change every place that uses the anchor; write the spec out in full", where, spec.Value)
	case spec.Kind != yaml.MappingNode:
		return false, fmt.Errorf("%s: spec is %s, not a mapping", where, manifest.KindName(spec))
	}
	if existing := manifest.Lookup(spec, "driftDetection"); existing != nil && !dec.override {
		f.verbosef("%s: kept the chart's spec.driftDetection (mode %q); %s would set %q: set override to replace it\n", where, manifest.Scalar(existing, "mode"), strings.Join(dec.origins, ", "), dec.mode)
		return false, nil
	}
	if f.IgnoreFrom != nil && dec.mode != flux.ModeDisabled {
		ref := HelmReleaseRef{Namespace: namespace, Name: name, ReleaseName: manifest.Scalar(spec, "releaseName"),
			TargetNamespace: manifest.Scalar(spec, "targetNamespace"), StorageNamespace: manifest.Scalar(spec, "storageNamespace")}
		more, notes, err := f.IgnoreFrom(ref)
		for _, n := range notes {
			f.logf("warning: %s: --ignore-from-cluster: %s\n", where, n)
		}
		if err != nil {
			f.logf("warning: %s: --ignore-from-cluster: %v; no rule added from the cluster\n", where, err)
		}
		dec.ignore = append(append([]flux.IgnoreRule{}, dec.ignore...), more...)
	}
	var value yaml.Node
	if err := value.Encode(driftDetectionSpec{Mode: dec.mode, Ignore: dec.ignore}); err != nil {
		return false, fmt.Errorf("%s: encode driftDetection: %w", where, err)
	}
	manifest.SetField(spec, "driftDetection", &value)
	f.Applied = append(f.Applied, Applied{Namespace: manifest.Scalar(meta, "namespace"), Name: name, Mode: dec.mode, Ignore: dec.ignore})
	f.verbosef("%s: spec.driftDetection.mode=%s, %d ignore rule(s), from %s\n", where, dec.mode, len(dec.ignore), strings.Join(dec.origins, ", "))
	return true, nil
}

// decide merges the rules that match one HelmRelease; ok is false when none does.
func (f *DriftDetection) decide(namespace, name string, labels map[string]string, matched []int) (decision, bool) {
	var dec decision
	ok := false
	for i, r := range f.Rules {
		if !r.Selector.Matches(namespace, name, labels) {
			continue
		}
		matched[i]++
		ok = true
		if r.Mode != "" {
			dec.mode = r.Mode
		}
		if r.Ignore != nil {
			dec.ignore = r.Ignore
		}
		if r.Override != nil {
			dec.override = *r.Override
		}
		dec.origins = append(dec.origins, r.Origin)
	}
	return dec, ok && dec.mode != ""
}

func (f *DriftDetection) logf(format string, args ...any) {
	if f.Log != nil {
		fmt.Fprintf(f.Log, "helm-drift: "+format, args...)
	}
}

func (f *DriftDetection) verbosef(format string, args ...any) {
	if f.Verbose {
		f.logf(format, args...)
	}
}
