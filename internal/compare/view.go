package compare

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/mergekeys"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

// View is one object's two sides as a reader sees them next to each other: the chart's side as
// compared, and the live side as the chart's with every divergence's cluster side in its place.
// What the comparison did not count as a divergence (an API-server default, a field an ignore
// rule drops, the metadata the server writes, a quantity written another way) is the chart's on
// both sides, so a line diff of the two shows the divergences and nothing else. A Secret's data
// and annotations are replaced on both sides by their sizes: a View never holds a Secret's value.
type View struct {
	// Chart and Live are the two sides; nil where that side has no object.
	Chart, Live map[string]any
	// ChartAt and LiveAt give, for each divergence's path, its RFC 6901 pointer in Chart and in
	// Live (absent where that side lacks the field).
	ChartAt, LiveAt map[string]string
}

// NewView returns the view of one compared object: chart and cluster as given to Compare (both
// normalised), divs the divergences kept for the report (after Ignore and Fold).
func NewView(typeMeta yaml.TypeMeta, chart, cluster map[string]any, divs []Divergence) *View {
	b := &viewer{comparer: comparer{kind: typeMeta.Kind},
		rows: make(map[string]Class, len(divs)), v: &View{Chart: chart, ChartAt: map[string]string{}, LiveAt: map[string]string{}}}
	for _, d := range divs {
		b.rows[d.Path] = d.Class
	}
	live, _ := b.walk("", "", "", "", rootSchema(typeMeta), chart, cluster, true, true)
	b.v.Live, _ = live.(map[string]any)
	if chart["kind"] == "Secret" {
		b.v.Chart, b.v.Live = RedactSecret(b.v.Chart, b.v.Live)
	}
	return b.v
}

// OneSide returns the view of an object only one side has: chart for an object the cluster
// lacks, live for one only the cluster has (both normalised).
func OneSide(chart, live map[string]any) *View {
	v := &View{Chart: chart, Live: live}
	if chart["kind"] == "Secret" || live["kind"] == "Secret" {
		v.Chart, v.Live = RedactSecret(chart, live)
	}
	return v
}

type viewer struct {
	comparer
	rows map[string]Class
	v    *View
}

// under reports whether a divergence lies strictly below path.
func (b *viewer) under(path string) bool {
	for p := range b.rows {
		if len(p) > len(path) && strings.HasPrefix(p, path) && (path == "" || p[len(path)] == '.' || p[len(path)] == '[') {
			return true
		}
	}
	return false
}

// walk returns the live side's value at path (present false where it has none): a, the chart's,
// except at a divergence, where it is b, the cluster's. outPtr is the pointer of the returned
// value in the live side, aPtr that of a in the chart's.
func (b *viewer) walk(path, pattern, aPtr, outPtr string, s *mergekeys.Node, a, c any, inA, inC bool) (any, bool) {
	if class, ok := b.rows[path]; ok {
		if inA {
			b.v.ChartAt[path] = aPtr
		}
		if class == ChartOnly || !inC {
			return nil, false
		}
		b.v.LiveAt[path] = outPtr
		return c, true
	}
	if !inC && !b.under(path) {
		return a, inA
	}
	if !inA && !b.under(path) {
		return nil, false // a default the server added, or a field an ignore rule drops
	}
	am, aIsMap := a.(map[string]any)
	cm, cIsMap := c.(map[string]any)
	if (aIsMap || !inA) && (cIsMap || !inC) {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range cm {
			keys[k] = true
		}
		out := make(map[string]any, len(keys))
		for _, k := range sortedKeys(keys) {
			av, okA := am[k]
			cv, okC := cm[k]
			e := "/" + escapePointer(k)
			if v, ok := b.walk(join(path, k), join(pattern, k), aPtr+e, outPtr+e, s.Field(k), av, cv, okA, okC); ok {
				out[k] = v
			}
		}
		return out, len(out) > 0 || (inA && inC)
	}
	al, aIsList := a.([]any)
	cl, cIsList := c.([]any)
	if (aIsList || !inA) && (cIsList || !inC) {
		out := b.list(path, pattern, aPtr, outPtr, s, al, cl)
		return out, len(out) > 0 || (inA && inC)
	}
	return a, inA // a leaf both sides state alike, or an ignored one: the chart's
}

// list is walk for two lists, their elements paired as Compare pairs them: by merge keys where
// the schema has them, else by index. The live list keeps the chart's order, the elements only
// the cluster has after it.
func (b *viewer) list(path, pattern, aPtr, outPtr string, s *mergekeys.Node, a, c []any) []any {
	keys, elems := s.Keys(), s.Elements()
	out := []any{}
	add := func(name string, ai int, av, cv any, okA, okC bool) {
		if v, ok := b.walk(name, pattern+"[]", aPtr+"/"+strconv.Itoa(ai), outPtr+"/"+strconv.Itoa(len(out)), elems, av, cv, okA, okC); ok {
			out = append(out, v)
		}
	}
	if len(keys) == 0 || !allMaps(a) || !allMaps(c) {
		for i := 0; i < max(len(a), len(c)); i++ {
			var av, cv any
			if i < len(a) {
				av = a[i]
			}
			if i < len(c) {
				cv = c[i]
			}
			add(fmt.Sprintf("%s[%d]", path, i), i, av, cv, i < len(a), i < len(c))
		}
		return out
	}
	for _, p := range pairByKeys(a, c, keys) {
		var av, cv any
		if p.a >= 0 {
			av = a[p.a]
		}
		if p.b >= 0 {
			cv = c[p.b]
		}
		add(path+"["+p.key+"]", p.a, av, cv, p.a >= 0, p.b >= 0)
	}
	return out
}

// RedactSecret returns copies of a Secret's two sides (either may be nil) with every value of
// its data, stringData and annotations replaced by its size: "(redacted, 12 bytes)", and on the
// chart's side "(redacted, 12 bytes, differs)" where both sides hold the key with
// different values, so that a changed key shows as changed without its value.
func RedactSecret(chart, live map[string]any) (map[string]any, map[string]any) {
	chart, live = shallowCopy(chart), shallowCopy(live)
	for _, field := range []string{"data", "stringData"} {
		cd, _ := chart[field].(map[string]any)
		ld, _ := live[field].(map[string]any)
		rc, rl := redactPair(cd, ld, field == "data")
		if cd != nil {
			chart[field] = rc
		}
		if ld != nil {
			live[field] = rl
		}
	}
	cm, _ := chart["metadata"].(map[string]any)
	lm, _ := live["metadata"].(map[string]any)
	ca, _ := cm["annotations"].(map[string]any)
	la, _ := lm["annotations"].(map[string]any)
	rc, rl := redactPair(ca, la, false)
	if ca != nil {
		cm = shallowCopy(cm)
		cm["annotations"] = rc
		chart["metadata"] = cm
	}
	if la != nil {
		lm = shallowCopy(lm)
		lm["annotations"] = rl
		live["metadata"] = lm
	}
	if len(chart) == 0 {
		chart = nil
	}
	if len(live) == 0 {
		live = nil
	}
	return chart, live
}

func redactPair(chart, live map[string]any, base64Data bool) (map[string]any, map[string]any) {
	rc, rl := make(map[string]any, len(chart)), make(map[string]any, len(live))
	for k, v := range chart {
		text := Redacted(SizeOf(v, base64Data), nil)
		if lv, ok := live[k]; ok && !normalize.Equal(lv, v) {
			text = strings.TrimSuffix(text, ")") + ", differs)"
		}
		rc[k] = text
	}
	for k, v := range live {
		rl[k] = Redacted(SizeOf(v, base64Data), nil)
	}
	return rc, rl
}

// SizeOf is the size in bytes of a Secret's value: a data value's decoded size (base64Data),
// else the string's length; -1 for a value that is not a string.
func SizeOf(v any, base64Data bool) int {
	s, ok := v.(string)
	if !ok {
		return -1
	}
	if base64Data {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return len(b)
		}
	}
	return len(s)
}

// Redacted is how a Secret's value is shown: "(redacted, 8 bytes)", or with to, a change of
// size "(redacted, 8 bytes -> 12 bytes)"; a size below zero is left out.
func Redacted(from int, to *int) string {
	size := func(n int) string {
		if n == 1 {
			return "1 byte"
		}
		return strconv.Itoa(n) + " bytes"
	}
	switch {
	case to != nil && from >= 0 && *to >= 0:
		return "(redacted, " + size(from) + " -> " + size(*to) + ")"
	case from >= 0:
		return "(redacted, " + size(from) + ")"
	}
	return "(redacted)"
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
