package defaulting

import (
	"math"
	"reflect"
)

// CRDAgainst is BuiltIn for a CustomResourceDefinition of apiextensions.k8s.io/v1 that the
// cluster holds as live: a version whose openAPIV3Schema equals, value for value, the one live
// stores for that version comes back as live's own. The API server wrote live's; writing it
// again gives it back (decoding and encoding are each other's inverse on what the server
// itself encoded), so that write is not made. A schema is most of a CRD, and its decoding most
// of the write's cost. The rest of the object, and any schema that differs, is written as
// BuiltIn writes it. Any other object, or no live one: BuiltIn.
func CRDAgainst(obj, live map[string]any) (out map[string]any, ok bool, err error) {
	if live == nil || obj["apiVersion"] != "apiextensions.k8s.io/v1" || obj["kind"] != "CustomResourceDefinition" {
		return BuiltIn(obj)
	}
	stored := map[string]map[string]any{}
	for _, v := range versions(live) {
		if name, ok := v["name"].(string); ok {
			if s := openAPIV3Schema(v); s != nil {
				stored[name] = s
			}
		}
	}
	// The object with each schema live holds as it is left empty, the rest shared.
	spec, _ := obj["spec"].(map[string]any)
	vs, _ := spec["versions"].([]any)
	kept := map[string]map[string]any{}
	cut := make([]any, len(vs))
	for i, v := range vs {
		cut[i] = v
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		s := openAPIV3Schema(vm)
		if s == nil || stored[name] == nil || kept[name] != nil || !sameValue(s, stored[name]) {
			continue
		}
		kept[name] = stored[name]
		vm = shallow(vm)
		sch := shallow(vm["schema"].(map[string]any))
		sch["openAPIV3Schema"] = map[string]any{}
		vm["schema"] = sch
		cut[i] = vm
	}
	if len(kept) == 0 {
		return BuiltIn(obj)
	}
	spec = shallow(spec)
	spec["versions"] = cut
	in := shallow(obj)
	in["spec"] = spec
	out, ok, err = BuiltIn(in)
	if err != nil || !ok {
		return out, ok, err
	}
	for _, v := range versions(out) {
		name, _ := v["name"].(string)
		if s := kept[name]; s != nil {
			if sch, ok := v["schema"].(map[string]any); ok {
				sch["openAPIV3Schema"] = s
			}
		}
	}
	return out, true, nil
}

// versions are obj's spec.versions that are maps.
func versions(obj map[string]any) []map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	vs, _ := spec["versions"].([]any)
	out := make([]map[string]any, 0, len(vs))
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// openAPIV3Schema is a CRD version's schema.openAPIV3Schema (nil: none).
func openAPIV3Schema(version map[string]any) map[string]any {
	sch, _ := version["schema"].(map[string]any)
	s, _ := sch["openAPIV3Schema"].(map[string]any)
	return s
}

func shallow(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sameValue tells whether a and b, decoded YAML or JSON, hold the same value: numbers equal
// whatever their Go type (a YAML document decodes whole numbers as int, the cluster's JSON as
// int64).
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !sameValue(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case string, bool, nil:
		return a == b
	}
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			return x == y
		}
	}
	x, okA := number(a)
	y, okB := number(b)
	return okA && okB && x == y
}

// number is v as a float64 when it is a number that one holds exactly.
func number(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		return float64(n), n > -1<<53 && n < 1<<53
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := rv.Uint()
		return float64(n), n < 1<<53
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		return f, !math.IsNaN(f)
	}
	return 0, false
}
