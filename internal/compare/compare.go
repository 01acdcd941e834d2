package compare

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/mergekeys"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

// Class says how a field diverges.
type Class string

// The classes of divergence.
const (
	// Differs: chart and cluster both have the field, with different values.
	Differs Class = "DIFFERS"
	// ChartOnly: the chart states the field, the cluster lacks it.
	ChartOnly Class = "CHART-ONLY"
	// ClusterOnly: the cluster has the field, the chart does not.
	ClusterOnly Class = "CLUSTER-ONLY"
)

// Divergence is one leaf field that is not the same in chart and cluster.
type Divergence struct {
	Class Class
	// Path names the field, lists by their merge keys:
	// spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value
	Path string
	// Pointer is the field's RFC 6901 JSON pointer, list elements by their index in the
	// cluster's object (the chart's, for an element only the chart has).
	Pointer string
	// Chart and Cluster are the two values (nil where absent); both nil when Redacted.
	Chart, Cluster any
	// Redacted is set for a Secret's data: values are never carried.
	Redacted bool
	// ChartSize and ClusterSize are, for a redacted leaf, the sizes of its two values in bytes
	// (a data value's decoded size); nil where that side lacks it or it is no string.
	ChartSize, ClusterSize *int
	// Inert is set (by MarkInert) for a divergence that changes nothing in the running pod.
	Inert bool
	// Entry is, for a leaf under a map entry or list element that only one side has, that
	// entry: Fold turns its leaves into one row.
	Entry *Entry
}

// Entry is a map entry or list element (with everything under it) that only one side has.
type Entry struct {
	Path, Pointer string
	// Value is the side's whole value there.
	Value any
	// Leaves counts the divergences recorded under it.
	Leaves int
}

// Result is the comparison of one object.
type Result struct {
	Divergences []Divergence
	// Compared counts the leaf fields looked at (in the chart, the cluster, or both).
	Compared int
}

// Compare compares the chart's and the cluster's version of one object (as decoded JSON:
// maps, slices, strings, float64/int64, bools). typeMeta selects the OpenAPI schema that
// gives the lists' merge keys; unknown kinds compare lists by index.
func Compare(typeMeta yaml.TypeMeta, chart, cluster map[string]any) Result {
	c := &comparer{kind: typeMeta.Kind,
		secret: typeMeta.Kind == "Secret" && !strings.Contains(typeMeta.APIVersion, "/")}
	c.walk("", "", "", rootSchema(typeMeta), chart, cluster, true, true, nil)
	sort.SliceStable(c.res.Divergences, func(i, j int) bool { return c.res.Divergences[i].Path < c.res.Divergences[j].Path })
	return c.res
}

// rootSchema is the kind's schema, as far as its lists' merge keys go (nil for none).
func rootSchema(t yaml.TypeMeta) *mergekeys.Node {
	return mergekeys.Root(t.APIVersion, t.Kind)
}

type comparer struct {
	kind   string
	secret bool
	res    Result
}

// walk compares a and b at path (pattern: the path with "[]" for list elements); inA/inB say
// whether each side has the field at all; parentB is the cluster's map holding b.
func (c *comparer) walk(path, pattern, ptr string, s *mergekeys.Node, a, b any, inA, inB bool, parentB map[string]any) {
	switch {
	case !inA:
		c.entry(path, ptr, b, func() { c.leaves(path, pattern, ptr, s, b, ClusterOnly, parentB) })
		return
	case !inB:
		c.entry(path, ptr, a, func() { c.leaves(path, pattern, ptr, s, a, ChartOnly, nil) })
		return
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			av, okA := am[k]
			bv, okB := bm[k]
			c.walk(join(path, k), join(pattern, k), ptr+"/"+escapePointer(k), s.Field(k), av, bv, okA, okB, bm)
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList {
		c.list(path, pattern, ptr, s, al, bl)
		return
	}
	c.res.Compared++
	if q, ok := normalize.EqualQuantities(a, b); ok && isQuantityPath(pattern) {
		if !q {
			c.add(Divergence{Class: Differs, Path: path, Pointer: ptr, Chart: a, Cluster: b})
		}
		return
	}
	if !normalize.Equal(a, b) {
		c.add(Divergence{Class: Differs, Path: path, Pointer: ptr, Chart: a, Cluster: b})
	}
}

// entry records, through record, the leaves of v, which only one side has at path; when v is a
// map or list, they are marked as one Entry for Fold.
func (c *comparer) entry(path, ptr string, v any, record func()) {
	from := len(c.res.Divergences)
	record()
	switch v.(type) {
	case map[string]any, []any:
	default:
		return
	}
	added := c.res.Divergences[from:]
	if len(added) == 0 {
		return
	}
	e := &Entry{Path: path, Pointer: ptr, Value: v, Leaves: len(added)}
	for i := range added {
		added[i].Entry = e
	}
}

// Fold turns the divergences under one Entry into one row, named by the entry's path, with
// the side's whole value (none where the leaves are redacted): an env entry added out of band
// is one row, env[name=TRACING], not one per field inside it; a map holding a single leaf is
// reported as that leaf. An entry some of whose leaves
// an ignore rule dropped stays leaf by leaf. Call it after Ignore and MarkInert.
func Fold(r *Result) {
	count := map[*Entry]int{}
	inert := map[*Entry]bool{}
	redacted := map[*Entry]bool{}
	for _, d := range r.Divergences {
		if e := d.Entry; e != nil {
			if count[e] == 0 {
				inert[e] = true
			}
			count[e]++
			inert[e] = inert[e] && d.Inert
			redacted[e] = redacted[e] || d.Redacted
		}
	}
	out := r.Divergences[:0]
	done := map[*Entry]bool{}
	for _, d := range r.Divergences {
		e := d.Entry
		// A map entry with a single leaf under it is that leaf: its path names the field
		// (spec.template.metadata.annotations.x, not ...annotations); a list element is always
		// named by its key.
		single := e != nil && e.Leaves == 1 && (d.Path == e.Path || !strings.HasSuffix(e.Path, "]"))
		if e == nil || count[e] != e.Leaves || single {
			d.Entry = nil
			out = append(out, d)
			continue
		}
		if done[e] {
			continue
		}
		done[e] = true
		folded := Divergence{Class: d.Class, Path: e.Path, Pointer: e.Pointer, Redacted: redacted[e], Inert: inert[e]}
		if !folded.Redacted {
			if d.Class == ChartOnly {
				folded.Chart = e.Value
			} else {
				folded.Cluster = e.Value
			}
		}
		out = append(out, folded)
	}
	r.Divergences = out
}

// list compares two lists: by merge keys where the schema has them, else by index.
func (c *comparer) list(path, pattern, ptr string, s *mergekeys.Node, a, b []any) {
	keys, elems := s.Keys(), s.Elements()
	if len(keys) == 0 || !allMaps(a) || !allMaps(b) {
		for i := 0; i < max(len(a), len(b)); i++ {
			var av, bv any
			if i < len(a) {
				av = a[i]
			}
			if i < len(b) {
				bv = b[i]
			}
			c.walk(fmt.Sprintf("%s[%d]", path, i), pattern+"[]", ptr+"/"+strconv.Itoa(i), elems, av, bv, i < len(a), i < len(b), nil)
		}
		return
	}
	for _, p := range pairByKeys(a, b, keys) {
		var av, bv any
		i := p.a
		if p.a >= 0 {
			av = withKeyDefaults(a[p.a].(map[string]any), keys)
		}
		if p.b >= 0 {
			bv, i = withKeyDefaults(b[p.b].(map[string]any), keys), p.b
		}
		c.walk(path+"["+p.key+"]", pattern+"[]", ptr+"/"+strconv.Itoa(i), elems, av, bv, p.a >= 0, p.b >= 0, nil)
	}
}

// keyedPair is one element of two lists paired by their merge keys: the key ("name=web") and
// the element's index in each list, -1 where that list lacks it.
type keyedPair struct {
	key  string
	a, b int
}

// pairByKeys pairs two lists of maps by merge keys: the first list's keys in its order, then
// the second's it lacks. A key that repeats in one list is paired once, at its last element.
func pairByKeys(a, b []any, keys []string) []keyedPair {
	index := func(l []any) (map[string]int, []string) {
		pos := map[string]int{}
		var order []string
		for i, e := range l {
			k := keyOf(e.(map[string]any), keys)
			if _, dup := pos[k]; !dup {
				order = append(order, k)
			}
			pos[k] = i
		}
		return pos, order
	}
	aPos, aOrder := index(a)
	bPos, bOrder := index(b)
	var out []keyedPair
	seen := map[string]bool{}
	for _, k := range append(aOrder, bOrder...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		p := keyedPair{key: k, a: -1, b: -1}
		if i, ok := aPos[k]; ok {
			p.a = i
		}
		if i, ok := bPos[k]; ok {
			p.b = i
		}
		out = append(out, p)
	}
	return out
}

// keyDefaults are the API-server defaults of merge-key fields, applied so that an element the
// chart writes without them matches the cluster's.
// xref: Kubernetes API reference, ContainerPort.protocol and ServicePort.protocol default TCP.
var keyDefaults = map[string]string{"protocol": "TCP"}

// withKeyDefaults returns e with the defaults of its missing merge-key fields filled in (a
// copy; e is not changed), so the defaulted field is no divergence either.
func withKeyDefaults(e map[string]any, keys []string) map[string]any {
	var out map[string]any
	for _, k := range keys {
		if _, ok := e[k]; ok {
			continue
		}
		if d, has := keyDefaults[k]; has {
			if out == nil {
				out = make(map[string]any, len(e)+1)
				for ek, ev := range e {
					out[ek] = ev
				}
			}
			out[k] = d
		}
	}
	if out == nil {
		return e
	}
	return out
}

func keyOf(e map[string]any, keys []string) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := e[k]
		if !ok {
			if d, has := keyDefaults[k]; has {
				v = d
			}
		}
		parts = append(parts, k+"="+normalize.ScalarString(v))
	}
	return strings.Join(parts, ",")
}

// leaves records every leaf under v as cls; a cluster-only leaf that is an API-server default
// is compared but no divergence. List elements are named by their merge keys, as in list.
func (c *comparer) leaves(path, pattern, ptr string, s *mergekeys.Node, v any, cls Class, parent map[string]any) {
	if cls == ClusterOnly && normalize.IsDefault(c.kind, pattern, v, parent) {
		c.res.Compared++
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			c.leaves(join(path, k), join(pattern, k), ptr+"/"+escapePointer(k), s.Field(k), t[k], cls, t)
		}
		if len(t) > 0 {
			return
		}
	case []any:
		keys, elems := s.Keys(), s.Elements()
		for i, e := range t {
			name := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := e.(map[string]any); ok && len(keys) > 0 && allMaps(t) {
				name = path + "[" + keyOf(withKeyDefaults(m, keys), keys) + "]"
			}
			c.leaves(name, pattern+"[]", ptr+"/"+strconv.Itoa(i), elems, e, cls, nil)
		}
		if len(t) > 0 {
			return
		}
	}
	c.res.Compared++
	d := Divergence{Class: cls, Path: path, Pointer: ptr}
	if cls == ChartOnly {
		d.Chart = v
	} else {
		d.Cluster = v
	}
	c.add(d)
}

// add records a divergence, without values under a Secret's data.
func (c *comparer) add(d Divergence) {
	// A Secret's annotations can carry its data too (kubectl's last-applied-configuration, or a
	// tool's own): their values are not shown either.
	if c.secret && (strings.HasPrefix(d.Path, "data.") || strings.HasPrefix(d.Path, "stringData.") || d.Path == "data" || d.Path == "stringData" ||
		strings.HasPrefix(d.Path, "metadata.annotations.") || d.Path == "metadata.annotations") {
		b64 := strings.HasPrefix(d.Path, "data.")
		d.ChartSize, d.ClusterSize = sizeOf(d.Chart, b64), sizeOf(d.Cluster, b64)
		d.Chart, d.Cluster, d.Redacted = nil, nil, true
	}
	c.res.Divergences = append(c.res.Divergences, d)
}

// sizeOf is SizeOf for a value that may be absent (nil).
func sizeOf(v any, base64Data bool) *int {
	if n := SizeOf(v, base64Data); v != nil && n >= 0 {
		return &n
	}
	return nil
}

// isQuantityPath reports whether a field holds a resource quantity (requests, limits,
// overhead, emptyDir sizes, PVC storage), compared by value: "1000m" is "1".
func isQuantityPath(pattern string) bool {
	return strings.Contains(pattern, "resources.limits.") || strings.Contains(pattern, "resources.requests.") ||
		strings.Contains(pattern, ".overhead.") || strings.HasSuffix(pattern, "emptyDir.sizeLimit")
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// escapePointer escapes a key for an RFC 6901 pointer: "~" as "~0", "/" as "~1".
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
