// Package flux is the Flux vocabulary the rest of helm-drift speaks: the API groups, versions,
// kinds and resources of the HelmRelease and its sources, the drift detection modes and ignore
// rules in Flux's own syntax, helm-controller's release-name rule, and what a next reconcile
// does. It holds data and rules only: the render steps (transform) and the readers (diff,
// helmcontroller, action) all import it, and it imports none of them.
package flux

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The HelmRelease and its sources.
const (
	// HelmReleaseGroup is the API group of Flux's HelmRelease.
	HelmReleaseGroup = "helm.toolkit.fluxcd.io"
	// HelmReleaseVersion is the HelmRelease version helm-drift reads and writes.
	HelmReleaseVersion = "v2"
	// HelmReleaseKind is the HelmRelease's kind.
	HelmReleaseKind = "HelmRelease"
	// SourceGroup is the API group of Flux's sources (OCIRepository, HelmRepository, ...).
	SourceGroup = "source.toolkit.fluxcd.io"
	// SourceVersion is the source version helm-drift writes.
	SourceVersion = "v1"
	// OCIRepositoryKind is the OCIRepository's kind.
	OCIRepositoryKind = "OCIRepository"
)

var (
	// HelmReleases is the HelmRelease resource.
	HelmReleases = schema.GroupVersionResource{Group: HelmReleaseGroup, Version: HelmReleaseVersion, Resource: "helmreleases"}
	// OCIRepositories is the OCIRepository resource.
	OCIRepositories = schema.GroupVersionResource{Group: SourceGroup, Version: SourceVersion, Resource: "ocirepositories"}
)

// Mode is a Flux drift detection mode (spec.driftDetection.mode).
type Mode string

// The modes Flux's helm-controller knows.
const (
	ModeEnabled  Mode = "enabled"
	ModeWarn     Mode = "warn"
	ModeDisabled Mode = "disabled"
)

// ParseMode validates a mode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeEnabled, ModeWarn, ModeDisabled:
		return m, nil
	}
	if s == "true" || s == "false" {
		return "", fmt.Errorf("unknown drift detection mode %q: want enabled, warn or disabled (YAML reads on/off/yes/no as booleans)", s)
	}
	return "", fmt.Errorf("unknown drift detection mode %q: want enabled, warn or disabled", s)
}

// IgnoreRule is one entry of spec.driftDetection.ignore, in Flux's own syntax.
type IgnoreRule struct {
	// Paths are RFC 6901 JSON pointers to the fields drift detection ignores.
	Paths []string `json:"paths" yaml:"paths"`
	// Target restricts the rule to the objects it selects; nil: every object of the release.
	Target *Target `json:"target,omitempty" yaml:"target,omitempty"`
}

// Target selects the objects an IgnoreRule applies to (Flux's kustomize.Selector).
type Target struct {
	Group              string `json:"group,omitempty" yaml:"group,omitempty"`
	Version            string `json:"version,omitempty" yaml:"version,omitempty"`
	Kind               string `json:"kind,omitempty" yaml:"kind,omitempty"`
	Name               string `json:"name,omitempty" yaml:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty" yaml:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty" yaml:"annotationSelector,omitempty"`
}

// Validate checks the pointers and selectors of an ignore rule.
func (r IgnoreRule) Validate() error {
	if len(r.Paths) == 0 {
		return fmt.Errorf("ignore rule has no paths; give at least one JSON pointer, e.g. /spec/replicas")
	}
	for _, p := range r.Paths {
		if err := ValidatePointer(p); err != nil {
			return err
		}
	}
	if r.Target != nil {
		for name, s := range map[string]string{"labelSelector": r.Target.LabelSelector, "annotationSelector": r.Target.AnnotationSelector} {
			if s == "" {
				continue
			}
			if _, err := labels.Parse(s); err != nil {
				return fmt.Errorf("ignore target %s %q: %v", name, s, err)
			}
		}
	}
	return nil
}

// ValidatePointer checks an RFC 6901 JSON pointer: empty (the whole object) or a "/"-separated
// path whose "~" are escapes (~0 for "~", ~1 for "/").
func ValidatePointer(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("ignore path %q is not a JSON pointer (RFC 6901): it must start with \"/\", e.g. /spec/replicas", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("ignore path %q: \"~\" at offset %d must be followed by 0 (for ~) or 1 (for /)", p, i)
		}
	}
	return nil
}

// ShortenName shortens a release name longer than 53 characters to its first 40 characters,
// a hyphen and the first 12 hex digits of its SHA-256, as helm-controller does.
// xref: helm-controller internal/release/name.go ShortenName.
func ShortenName(name string) string {
	const maxLength, hashLength = 53, 12
	if len(name) <= maxLength {
		return name
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return name[:maxLength-(hashLength+1)] + "-" + sum[:hashLength]
}

// IgnoreRules reads the value of a HelmRelease's spec.driftDetection.ignore, from its typed
// form (helm-controller's api/v2) or its unstructured one, in Flux's syntax; none for nil.
func IgnoreRules(ignore any) ([]IgnoreRule, error) {
	if ignore == nil {
		return nil, nil
	}
	raw, err := json.Marshal(ignore)
	if err != nil {
		return nil, fmt.Errorf("spec.driftDetection.ignore: %w", err)
	}
	var rules []IgnoreRule
	if err := json.Unmarshal(raw, &rules); err != nil {
		return nil, fmt.Errorf("spec.driftDetection.ignore: %w", err)
	}
	return rules, nil
}

// Next is what helm-controller's next reconcile of a HelmRelease will do, and why.
type Next struct {
	// Action is one of NextInstall, NextUpgrade, NextReinstall, NextCorrect, NextNothing
	// (and "uninstall", diff tree's for a HelmRelease deleted).
	Action string `json:"action"`
	Reason string `json:"reason"`
}

// The actions of a next reconcile.
const (
	// NextInstall: there is no release yet; every object is created.
	NextInstall = "install"
	// NextUpgrade: helm-controller upgrades the release (server-side apply as helm-controller,
	// conflicts forced).
	NextUpgrade = "upgrade"
	// NextReinstall: the release's target changed (its name, namespace, storage namespace, or
	// its chart's name under upgrade.chartNameChangeStrategy Reinstall): helm-controller
	// uninstalls the release, then installs the new one (diff tree only).
	NextReinstall = "reinstall"
	// NextCorrect: no upgrade, but drift detection is enabled: helm-controller restores what
	// the stored manifest states.
	NextCorrect = "drift correction"
	// NextNothing: nothing will change the cluster (suspended, drift detection off or warn
	// only, a release that must be remediated first).
	NextNothing = "nothing"
)

// ReleaseName is the Helm release a HelmRelease named name writes, as helm-controller names
// it: spec.releaseName, else [spec.targetNamespace-]name, shortened past 53 characters.
// xref: helm-controller api/v2 HelmRelease.GetReleaseName; internal/release/name.go.
func ReleaseName(name, releaseName, targetNamespace string) string {
	if releaseName == "" {
		releaseName = name
		if targetNamespace != "" {
			releaseName = targetNamespace + "-" + name
		}
	}
	return ShortenName(releaseName)
}
