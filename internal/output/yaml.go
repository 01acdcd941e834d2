package output

import (
	"math"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// marshalYAML prints obj as sigs.k8s.io/yaml (kubectl's printer) prints it, in one pass:
// sigs.k8s.io/yaml goes through JSON (marshal, then parse the JSON as YAML, then print), which
// for a CRD of twenty thousand lines costs three times the memory of printing. What the round
// trip changes is only numbers: a whole float64 prints as the integer its JSON text reads as
// (wholeNumbers). TestMarshalYAMLAsSigs holds the two to the same bytes on every object of the
// test data and the corpus.
func marshalYAML(obj map[string]any) ([]byte, error) {
	b, err := yamlv2.Marshal(wholeNumbers(obj))
	if err != nil {
		return sigsyaml.Marshal(obj)
	}
	return b, nil
}

// wholeNumbers is v with every whole float64 below 1e21 (which JSON writes without an
// exponent) as the int64, or uint64, that its JSON text reads as.
func wholeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = wholeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = wholeNumbers(e)
		}
		return out
	case float64:
		if t != math.Trunc(t) || math.Abs(t) >= 1e21 {
			return v
		}
		text := strconv.FormatFloat(t, 'f', -1, 64)
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return u
		}
	}
	return v
}
