package transform

import (
	"fmt"
	"strings"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selector"
)

// Rule is one drift detection decision: the HelmReleases its selector matches get its mode and
// ignore rules.
type Rule struct {
	// Selector chooses the HelmReleases.
	Selector selector.Selector
	// Mode is set as spec.driftDetection.mode; empty: this rule does not decide the mode.
	Mode flux.Mode
	// Ignore is set as spec.driftDetection.ignore; nil: this rule does not decide it.
	Ignore []flux.IgnoreRule
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
	mode, err := flux.ParseMode(v[i+1:])
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w (the form is SELECTOR=MODE, e.g. label:app=web=enabled)", origin, err)
	}
	sel, err := selector.Parse(v[:i])
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w", origin, err)
	}
	return Rule{Selector: sel, Mode: mode, Origin: origin}, nil
}
