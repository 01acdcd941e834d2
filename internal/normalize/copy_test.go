package normalize

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDeepCopy: a copy shares nothing with the original, holds what a JSON round trip holds
// (whole numbers int64, others float64), and keeps an int64 past 2^53 exactly, which the round
// trip through float64 rounded.
func TestDeepCopy(t *testing.T) {
	in := map[string]any{
		"spec": map[string]any{"replicas": float64(3), "ratio": 0.25, "big": int64(9007199254740993), "on": true, "none": nil,
			"ports": []any{map[string]any{"port": int64(80), "name": "http"}, "x", []any{float64(1), 1.5}}},
	}
	out := deepCopy(in)
	want := map[string]any{
		"spec": map[string]any{"replicas": int64(3), "ratio": 0.25, "big": int64(9007199254740993), "on": true, "none": nil,
			"ports": []any{map[string]any{"port": int64(80), "name": "http"}, "x", []any{int64(1), 1.5}}},
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("copy:\n%#v\nwant:\n%#v", out, want)
	}
	// What JSON gives, but for the int64 past 2^53 (JSON's float64 rounds it).
	b, _ := json.Marshal(in)
	var viaJSON map[string]any
	json.Unmarshal(b, &viaJSON)
	viaJSON = toInt64(viaJSON).(map[string]any)
	viaJSON["spec"].(map[string]any)["big"] = int64(9007199254740993)
	if !reflect.DeepEqual(out, viaJSON) {
		t.Errorf("copy differs from the JSON round trip:\n%#v\n%#v", out, viaJSON)
	}
	out["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"] = int64(81)
	out["spec"].(map[string]any)["replicas"] = int64(9)
	if in["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"] != int64(80) || in["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("changing the copy changed the original: %#v", in)
	}
}
