package mergekeys

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

var update = flag.Bool("update", false, "rewrite table.txt from kyaml's builtin schema")

// generated is the table kyaml's builtin schema gives now (see Node): every field, by kyaml's
// own lookups (Field's and Elements' references resolved as they resolve them), from every
// kind of the schema, that leads to a list with merge keys. A schema reached through a
// reference is one node, named by its definition (so that recursive schemas end); an inline one
// is named by its parent and field.
func generated(t *testing.T) string {
	t.Helper()
	root := openapi.Schema()
	type gnode struct {
		keys          []string
		fields        map[string]string
		any, elems    string
		names         []string
		reaches, done bool
	}
	nodes := map[string]*gnode{}
	// child resolves a field's schema as kyaml's Field and Elements do, and names it.
	child := func(parent, name string, s spec.Schema) (string, spec.Schema, bool) {
		id := parent + "/" + name
		for s.Ref.String() != "" {
			ref := s.Ref.String()
			sc, err := openapi.Resolve(&s.Ref, root)
			if err != nil {
				return "", s, false
			}
			id, s = strings.TrimPrefix(ref, "#/definitions/"), *sc
		}
		return id, s, true
	}
	var visit func(id string, s spec.Schema)
	visit = func(id string, s spec.Schema) {
		if nodes[id] != nil {
			return
		}
		n := &gnode{fields: map[string]string{}}
		nodes[id] = n
		_, n.keys = (&openapi.ResourceSchema{Schema: &s}).PatchStrategyAndKeyList()
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			n.names = append(n.names, name)
			if cid, cs, ok := child(id, name, s.Properties[name]); ok {
				n.fields[name] = cid
				visit(cid, cs)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			if cid, cs, ok := child(id, "*", *s.AdditionalProperties.Schema); ok {
				n.any = cid
				visit(cid, cs)
			}
		}
		if len(s.Type) == 1 && s.Type[0] == "array" && s.Items != nil && s.Items.Schema != nil {
			if cid, cs, ok := child(id, "[]", *s.Items.Schema); ok {
				n.elems = cid
				visit(cid, cs)
			}
		}
	}
	types := map[string]string{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range root.Definitions {
			if !yield(k) {
				return
			}
		}
	}) {
		d := root.Definitions[name]
		for _, tm := range kindsOf(d) {
			key := tm.APIVersion + " " + tm.Kind
			if prev, ok := types[key]; ok {
				t.Fatalf("%s is both %s and %s: kyaml keeps either", key, prev, name)
			}
			types[key] = name
			visit(name, d)
		}
	}
	// Which nodes lead to merge keys: until nothing changes (the graph has cycles).
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if n.reaches {
				continue
			}
			r := len(n.keys) > 0 || (n.any != "" && nodes[n.any].reaches) || (n.elems != "" && nodes[n.elems].reaches)
			for _, c := range n.fields {
				r = r || nodes[c].reaches
			}
			if r {
				n.reaches, changed = true, true
			}
		}
	}
	var b strings.Builder
	b.WriteString("# The merge keys of kyaml's builtin schema, written by go test ./internal/mergekeys -update;\n# do not edit.\n")
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range types {
			if !yield(k) {
				return
			}
		}
	}) {
		if nodes[types[key]].reaches {
			fmt.Fprintf(&b, "type %s %s\n", key, types[key])
		}
	}
	ids := make([]string, 0, len(nodes))
	for id, n := range nodes {
		if n.reaches {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		n := nodes[id]
		if len(n.keys) > 0 {
			fmt.Fprintf(&b, "node %s %s\n", id, strings.Join(n.keys, ","))
		} else {
			fmt.Fprintf(&b, "node %s\n", id)
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range n.fields {
				if !yield(k) {
					return
				}
			}
		}) {
			if nodes[n.fields[name]].reaches {
				fmt.Fprintf(&b, "field %s %s %s\n", id, name, n.fields[name])
			}
		}
		if n.any != "" && nodes[n.any].reaches {
			fmt.Fprintf(&b, "field %s * %s\n", id, n.any)
			if len(n.names) > 0 {
				fmt.Fprintf(&b, "names %s %s\n", id, strings.Join(n.names, ","))
			}
		}
		if n.elems != "" && nodes[n.elems].reaches {
			fmt.Fprintf(&b, "elems %s %s\n", id, n.elems)
		}
	}
	return b.String()
}

// kindsOf are the kinds a definition of the schema is the schema of, as kyaml indexes them
// (x-kubernetes-group-version-kind).
// xref: kyaml openapi/openapi.go parseBuiltinSchema, toTypeMeta.
func kindsOf(d spec.Schema) []yaml.TypeMeta {
	var out []yaml.TypeMeta
	exts, _ := d.Extensions["x-kubernetes-group-version-kind"].([]any)
	for _, e := range exts {
		m, _ := e.(map[string]any)
		kind, _ := m["kind"].(string)
		apiVersion, _ := m["version"].(string)
		if g, _ := m["group"].(string); g != "" {
			apiVersion = g + "/" + apiVersion
		}
		out = append(out, yaml.TypeMeta{APIVersion: apiVersion, Kind: kind})
	}
	return out
}

// TestTable: table.txt is what kyaml's builtin schema gives now (go test -update rewrites it,
// as when kyaml is upgraded).
func TestTable(t *testing.T) {
	want := generated(t)
	if *update {
		if err := os.WriteFile("table.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if table != want {
		t.Fatal("table.txt is stale: go test ./internal/mergekeys -update rewrites it")
	}
}

// TestLikeKyaml: for every kind of kyaml's builtin schema, every field reached by kyaml's own
// lookups (each named field, any other key of a map, a list's elements) has the merge keys
// kyaml gives it, and where the table has no node kyaml has no merge key anywhere below. Each
// pair of a table node and a kyaml schema (told apart by what kyaml shares between its copies)
// is walked once.
func TestLikeKyaml(t *testing.T) {
	root := openapi.Schema()
	type pair struct {
		n                       *Node
		props, items, addl, ext uintptr
	}
	seen := map[pair]bool{}
	var walk func(path string, n *Node, rs *openapi.ResourceSchema) int
	walk = func(path string, n *Node, rs *openapi.ResourceSchema) int {
		if rs == nil || rs.Schema == nil {
			if n != nil {
				t.Errorf("%s: a table node where kyaml has no schema", path)
			}
			return 0
		}
		s := rs.Schema
		p := pair{n: n, props: reflect.ValueOf(s.Properties).Pointer(), ext: reflect.ValueOf(s.Extensions).Pointer()}
		if s.Items != nil {
			p.items = reflect.ValueOf(s.Items).Pointer()
		}
		if s.AdditionalProperties != nil {
			p.addl = reflect.ValueOf(s.AdditionalProperties).Pointer()
		}
		if seen[p] {
			return 0
		}
		seen[p] = true
		_, want := rs.PatchStrategyAndKeyList()
		if got := n.Keys(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: keys %v, kyaml's %v", path, got, want)
		}
		count := 1
		for name := range s.Properties {
			count += walk(path+"."+name, n.Field(name), rs.Field(name))
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			count += walk(path+".*", n.Field("no-such-field-name"), rs.Field("no-such-field-name"))
		}
		if len(s.Type) == 1 && s.Type[0] == "array" {
			count += walk(path+"[]", n.Elements(), rs.Elements())
		}
		return count
	}
	kinds, walked := 0, 0
	for name, d := range root.Definitions {
		for _, tm := range kindsOf(d) {
			rs := openapi.SchemaForResourceType(tm)
			if rs == nil {
				t.Fatalf("%s: kyaml has no schema for %s %s", name, tm.APIVersion, tm.Kind)
			}
			kinds++
			walked += walk(tm.APIVersion+"/"+tm.Kind, Root(tm.APIVersion, tm.Kind), rs)
		}
	}
	if kinds < 100 {
		t.Fatalf("%d kinds in kyaml's schema: want the builtin schema's hundreds", kinds)
	}
	t.Logf("%d kinds, %d schemas walked", kinds, walked)
}

// TestKnownKeys: the merge keys everyone knows, and none where there are none.
func TestKnownKeys(t *testing.T) {
	for _, c := range []struct {
		apiVersion, kind string
		path             []string
		want             []string
	}{
		{"apps/v1", "Deployment", []string{"spec", "template", "spec", "containers"}, []string{"name"}},
		{"apps/v1", "Deployment", []string{"spec", "template", "spec", "containers", "[]", "ports"}, []string{"containerPort", "protocol"}},
		{"apps/v1", "Deployment", []string{"spec", "template", "spec", "containers", "[]", "env"}, []string{"name"}},
		{"v1", "Service", []string{"spec", "ports"}, []string{"port", "protocol"}},
		{"batch/v1", "CronJob", []string{"spec", "jobTemplate", "spec", "template", "spec", "volumes"}, []string{"name"}},
		{"v1", "Pod", []string{"spec", "tolerations"}, nil},
		{"v1", "ConfigMap", []string{"data", "key"}, nil},
		{"example.com/v1", "Widget", []string{"spec", "items"}, nil},
	} {
		n := Root(c.apiVersion, c.kind)
		for _, p := range c.path {
			if p == "[]" {
				n = n.Elements()
			} else {
				n = n.Field(p)
			}
		}
		if got := n.Keys(); !slices.Equal(got, c.want) {
			t.Errorf("%s %s %v: %v, want %v", c.apiVersion, c.kind, c.path, got, c.want)
		}
	}
}
