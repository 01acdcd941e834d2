package compare

import (
	"path"
	"strings"

	"github.com/helm-drift/helm-drift/internal/flux"
	"k8s.io/apimachinery/pkg/labels"
)

// Object identifies the object a Result belongs to, for ignore rule targets.
type Object struct {
	Group, Version, Kind, Name, Namespace string
	Labels, Annotations                   map[string]string
}

// Ignore drops the divergences that ignore rules in Flux's syntax (spec.driftDetection.ignore:
// JSON pointers, an optional target) cover for obj: a divergence is covered when its pointer is
// a rule's path or lies under it. It returns how many it dropped. Rules must be valid
// (flux.IgnoreRule.Validate).
func Ignore(r *Result, rules []flux.IgnoreRule, obj Object) int {
	var paths []string
	for _, rule := range rules {
		if rule.Target == nil || targets(*rule.Target, obj) {
			paths = append(paths, rule.Paths...)
		}
	}
	if len(paths) == 0 {
		return 0
	}
	kept := r.Divergences[:0]
	dropped := 0
	for _, d := range r.Divergences {
		if covered(d.Pointer, paths) {
			dropped++
			continue
		}
		kept = append(kept, d)
	}
	r.Divergences = kept
	return dropped
}

func covered(ptr string, paths []string) bool {
	for _, p := range paths {
		if p == "" || ptr == p || strings.HasPrefix(ptr, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// targets reports whether a Flux kustomize selector matches obj. Name and namespace are
// regular-expression anchored in Flux; here they match exactly or as path globs.
func targets(t flux.Target, obj Object) bool {
	match := func(pattern, v string) bool {
		if pattern == "" {
			return true
		}
		ok, _ := path.Match(pattern, v)
		return ok || pattern == v
	}
	if !match(t.Group, obj.Group) || !match(t.Version, obj.Version) || !match(t.Kind, obj.Kind) ||
		!match(t.Name, obj.Name) || !match(t.Namespace, obj.Namespace) {
		return false
	}
	for sel, set := range map[string]map[string]string{t.LabelSelector: obj.Labels, t.AnnotationSelector: obj.Annotations} {
		if sel == "" {
			continue
		}
		s, err := labels.Parse(sel)
		if err != nil || !s.Matches(labels.Set(set)) {
			return false
		}
	}
	return true
}
