// Package selector parses and matches the selectors that choose HelmReleases: a name, a
// namespace/name, a glob of either, or a label selector. It knows nothing of YAML.
package selector

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// LabelPrefix starts a label selector: `label:app=web`, `label:tier in (db,cache)`.
const LabelPrefix = "label:"

// Selector chooses objects by name, namespace/name, glob, or labels.
type Selector struct {
	raw       string
	namespace string // a glob; empty: any namespace
	name      string // a glob
	labels    labels.Selector
}

// globChars are the characters a name or namespace glob may hold besides those of a name.
var globRE = regexp.MustCompile(`^[a-z0-9.\-*?\[\]!^]+$`)

// Parse parses one selector:
//
//	podinfo                 the HelmRelease named podinfo, in any namespace
//	flux-system/podinfo     that name in that namespace
//	flux-system/*           every HelmRelease in flux-system (globs: * ? [a-z], as in path.Match)
//	*-db                    a glob on the name, any namespace
//	label:app=web           a Kubernetes label selector (=, ==, !=, in, notin, exists, !key)
func Parse(s string) (Selector, error) {
	sel := Selector{raw: s}
	if strings.TrimSpace(s) == "" {
		return sel, fmt.Errorf("empty selector: give a name, namespace/name, a glob or label:key=value")
	}
	if rest, ok := strings.CutPrefix(s, LabelPrefix); ok {
		if strings.TrimSpace(rest) == "" {
			return sel, fmt.Errorf("selector %q: empty label selector after %q; e.g. label:app=web", s, LabelPrefix)
		}
		ls, err := labels.Parse(rest)
		if err != nil {
			return sel, fmt.Errorf("selector %q: invalid label selector: %v", s, err)
		}
		sel.labels = ls
		return sel, nil
	}
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 1:
		sel.name = parts[0]
	case 2:
		sel.namespace, sel.name = parts[0], parts[1]
		if err := checkPart(s, "namespace", sel.namespace, validation.IsDNS1123Label); err != nil {
			return sel, err
		}
	default:
		return sel, fmt.Errorf("selector %q: more than one \"/\"; the forms are name, namespace/name, a glob, or label:key=value", s)
	}
	if err := checkPart(s, "name", sel.name, validation.IsDNS1123Subdomain); err != nil {
		return sel, err
	}
	return sel, nil
}

// checkPart validates a name or namespace, or a glob standing for one.
func checkPart(sel, what, v string, valid func(string) []string) error {
	if v == "" {
		return fmt.Errorf("selector %q: empty %s", sel, what)
	}
	if !isGlob(v) {
		if errs := valid(v); len(errs) > 0 {
			return fmt.Errorf("selector %q: %q is not a valid %s: %s", sel, v, what, strings.Join(errs, "; "))
		}
		return nil
	}
	if !globRE.MatchString(v) {
		return fmt.Errorf("selector %q: glob %q may hold only lower-case letters, digits, '-', '.' and the glob characters * ? [ ]", sel, v)
	}
	if _, err := path.Match(v, ""); err != nil {
		return fmt.Errorf("selector %q: malformed glob %q: %v", sel, v, err)
	}
	return nil
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// Matches reports whether an object with this namespace, name and labels is selected.
func (s Selector) Matches(namespace, name string, objLabels map[string]string) bool {
	if s.labels != nil {
		return s.labels.Matches(labels.Set(objLabels))
	}
	if s.namespace != "" {
		if ok, _ := path.Match(s.namespace, namespace); !ok {
			return false
		}
	}
	ok, _ := path.Match(s.name, name)
	return ok
}

// String returns the selector as it was written.
func (s Selector) String() string { return s.raw }
