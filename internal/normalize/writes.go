package normalize

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A serverWrite is a value the API server writes on a create beyond decoding and defaulting,
// which internal/defaulting reproduces, and beyond allocation, which Allocated takes from the
// live object: what a registry strategy or an admission plugin adds. Such a field in the
// cluster, which the chart does not state, is not drift. Patterns name fields with "[]" for
// any list element.
type defaultRule struct {
	pattern string
	// value is the value written; when is used instead where it depends on siblings or on
	// the cluster.
	value any
	when  func(value any, parent map[string]any) bool
}

// defaultTolerations are the two the DefaultTolerationSeconds admission plugin adds to a Pod.
// xref: Kubernetes, plugin/pkg/admission/defaulttolerationseconds/admission.go (300 s each).
var defaultTolerations = []any{
	map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
	map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
}

// kindDefaults are the writes of registry strategies and admission plugins, by kind.
var kindDefaults = map[string][]defaultRule{
	"DaemonSet": {
		{pattern: "metadata.annotations.deprecated.daemonset.template.generation", when: anyValue}, // xref: Kubernetes, pkg/registry/apps/daemonset/strategy.go PrepareForCreate
	},
	"PersistentVolumeClaim": {
		{pattern: "metadata.finalizers", value: []any{"kubernetes.io/pvc-protection"}}, // xref: Kubernetes, plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go
	},
	"PersistentVolume": {
		{pattern: "metadata.finalizers", value: []any{"kubernetes.io/pv-protection"}}, // xref: the same plugin
	},
	"Pod": {
		{pattern: "spec.priority", value: int64(0)},                                                                              // xref: Kubernetes, plugin/pkg/admission/priority/admission.go (no PriorityClass: 0)
		{pattern: "spec.preemptionPolicy", value: "PreemptLowerPriority"},                                                        // xref: the same plugin, with the priority
		{pattern: "spec.tolerations", when: func(v any, _ map[string]any) bool { return equalUnordered(v, defaultTolerations) }}, // xref: defaultTolerations
	},
}

func anyValue(any, map[string]any) bool { return true }

// IsDefault reports whether value, which the cluster has at pattern and the chart does not
// state, is what the API server writes by itself for kind (see kindDefaults).
func IsDefault(kind, pattern string, value any, parent map[string]any) bool {
	for _, r := range rulesFor(kind, pattern) {
		if r.when != nil && r.when(value, parent) || r.when == nil && equalValue(r.value, value) {
			return true
		}
	}
	return false
}

// rulesFor returns the rules whose full pattern is pattern.
func rulesFor(kind, pattern string) []defaultRule {
	var out []defaultRule
	for _, r := range kindDefaults[kind] {
		if r.pattern == pattern {
			out = append(out, r)
		}
	}
	return out
}

// equalUnordered reports whether v is a list holding exactly the elements of want, in any order.
func equalUnordered(v any, want []any) bool {
	l, ok := v.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	used := make([]bool, len(want))
	for _, e := range l {
		found := false
		for i, w := range want {
			if !used[i] && reflect.DeepEqual(normalizeNumbers(e), w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// normalizeNumbers turns whole float64 numbers into int64, as the tables write them.
func normalizeNumbers(v any) any { return toInt64(deepCopyValue(v)) }

func equalValue(a, b any) bool {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap || bIsMap {
		return aIsMap && bIsMap && len(am) == 0 && len(bm) == 0
	}
	return Equal(a, b)
}

// EqualQuantities compares two resource quantities by value ("1000m" is "1"); ok is false
// when either is not a quantity.
func EqualQuantities(a, b any) (equal, ok bool) {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok && !bok {
		return false, false
	}
	qa, err := resource.ParseQuantity(quantityString(a, as, aok))
	if err != nil {
		return false, false
	}
	qb, err := resource.ParseQuantity(quantityString(b, bs, bok))
	if err != nil {
		return false, false
	}
	return qa.Cmp(qb) == 0, true
}

func quantityString(v any, s string, isString bool) string {
	if isString {
		return s
	}
	return ScalarString(v)
}
