package transform

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/helm-drift/helm-drift/internal/selector"
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

// Rule is one drift detection decision: the HelmReleases its selector matches get its mode and
// ignore rules.
type Rule struct {
	// Selector chooses the HelmReleases.
	Selector selector.Selector
	// Mode is set as spec.driftDetection.mode; empty: this rule does not decide the mode.
	Mode Mode
	// Ignore is set as spec.driftDetection.ignore; nil: this rule does not decide it.
	Ignore []IgnoreRule
	// Override replaces a driftDetection the chart already sets; nil: this rule does not decide.
	Override *bool
	// Origin names the rule in messages: `--drift-detection web=enabled`, `config.yaml rule 2`.
	Origin string
}

// ParseFlagRule parses the value of a --drift-detection flag, SELECTOR=MODE. The mode follows
// the last "=", so a label selector keeps its own: label:app=web=enabled.
func ParseFlagRule(v string) (Rule, error) {
	origin := "--drift-detection " + v
	i := strings.LastIndexByte(v, '=')
	if i < 0 {
		return Rule{}, fmt.Errorf("%s: want SELECTOR=MODE, e.g. flux-system/podinfo=enabled", origin)
	}
	mode, err := ParseMode(v[i+1:])
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w (the form is SELECTOR=MODE, e.g. label:app=web=enabled)", origin, err)
	}
	sel, err := selector.Parse(v[:i])
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w", origin, err)
	}
	return Rule{Selector: sel, Mode: mode, Origin: origin}, nil
}
