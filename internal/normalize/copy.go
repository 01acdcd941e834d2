package normalize

import (
	"encoding/json"
)

func deepCopy(m map[string]any) map[string]any {
	out, _ := deepCopyValue(m).(map[string]any)
	return out
}

// deepCopyValue copies a decoded JSON value, whole float64 numbers as int64 (as toInt64); a
// value of another type goes through JSON.
func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	case nil, string, bool, int64:
		return t
	case float64:
		return toInt64(t)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return toInt64(out)
}

// toInt64 turns whole float64 numbers (what encoding/json decodes) into int64, as the
// decoded objects elsewhere hold them.
func toInt64(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = toInt64(e)
		}
	case []any:
		for i, e := range t {
			t[i] = toInt64(e)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}
