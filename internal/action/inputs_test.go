package action

import (
	"testing"

	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// TestRenderInputs: the digest of a render's inputs is equal across the Helm 3 and Helm 4 chart
// types and the empty forms a stored release writes, and differs on any template, file,
// default value or user-supplied value.
func TestRenderInputs(t *testing.T) {
	c3 := func(tpl string, values map[string]any) *chart3.Chart {
		return &chart3.Chart{Metadata: &chart3.Metadata{Name: "app", Version: "1.0.0"}, Values: values,
			Templates: []*chart3.File{{Name: "templates/cm.yaml", Data: []byte(tpl)}}}
	}
	c4 := func(tpl string, values map[string]any) *chartv2.Chart {
		return &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "app", Version: "1.0.0"}, Values: values,
			Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(tpl)}}}
	}
	base := inputs3(c3("a", map[string]any{"x": 1.0}), nil).digest()
	for _, tc := range []struct {
		name string
		got  string
		same bool
	}{
		{"the Helm 4 chart type", inputs4(c4("a", map[string]any{"x": 1.0}), nil).digest(), true},
		{"no values stored as {}", inputs3(c3("a", map[string]any{"x": 1.0}), map[string]any{}).digest(), true},
		{"a template changed", inputs3(c3("b", map[string]any{"x": 1.0}), nil).digest(), false},
		{"a default value changed", inputs3(c3("a", map[string]any{"x": 2.0}), nil).digest(), false},
		{"a user-supplied value", inputs3(c3("a", map[string]any{"x": 1.0}), map[string]any{"x": 2.0}).digest(), false},
	} {
		if (tc.got == base) != tc.same {
			t.Errorf("%s: digest equal = %v, want %v", tc.name, tc.got == base, tc.same)
		}
	}
	if empty := inputs3(c3("a", nil), nil).digest(); empty != inputs3(c3("a", map[string]any{}), nil).digest() {
		t.Error("no default values (nil) and {} digest differently")
	}
}
