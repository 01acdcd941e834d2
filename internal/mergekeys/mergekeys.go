// Package mergekeys tells which lists of the built-in Kubernetes kinds are merged by key, and
// by which keys (a Deployment's containers by name, a Service's ports by port and protocol), as
// kyaml's builtin OpenAPI schema tells it (x-kubernetes-patch-strategy and its merge keys), from
// a table generated from that schema (table.txt, by go test -update): a comparison needs no
// parse of the schema, which took 20 ms of CPU, more than the rest of a preview of one
// HelmRelease. The table keeps only the fields that lead to a list merged by key; a lookup
// answers as kyaml's ResourceSchema does (Field, Elements, PatchStrategyAndKeyList), nil where
// no merge key lies below.
package mergekeys

import (
	_ "embed" // the table
	"strings"
	"sync"
)

//go:embed table.txt
var table string

// Node is the schema of a field, as far as merge keys go. A nil Node has no merge keys below
// it; its methods may be called on nil.
type Node struct {
	keys   []string
	fields map[string]*Node
	// any is the schema of a map's values (additionalProperties); names are then the fields
	// the schema names, which are not map values.
	any   *Node
	names map[string]bool
	elems *Node
}

// Keys are the merge keys of the list this node is the schema of (none when it is not merged
// by key).
func (n *Node) Keys() []string {
	if n == nil {
		return nil
	}
	return n.keys
}

// Field is the schema of field k of an object of this schema: a field the schema names, or
// else any key of a map.
func (n *Node) Field(k string) *Node {
	if n == nil {
		return nil
	}
	if c, ok := n.fields[k]; ok {
		return c
	}
	if n.names[k] {
		return nil
	}
	return n.any
}

// Elements is the schema of the elements of a list of this schema.
func (n *Node) Elements() *Node {
	if n == nil {
		return nil
	}
	return n.elems
}

// Root is the schema of the kind (apiVersion "apps/v1", kind "Deployment"), nil when it has no
// merge keys or is not a built-in kind.
func Root(apiVersion, kind string) *Node {
	return loaded().roots[apiVersion+" "+kind]
}

type index struct {
	roots map[string]*Node
}

// loaded is the table, read once.
var loaded = sync.OnceValue(func() *index {
	ix, err := parse(table)
	if err != nil {
		panic("mergekeys: table.txt: " + err.Error()) // generated and tested: never at run time
	}
	return ix
})

// parse reads a table (see the generator, TestTable):
//
//	type APIVERSION KIND NODE
//	node ID [KEY,KEY...]
//	field ID NAME CHILD      (NAME "*" for a map's values)
//	elems ID CHILD
//	names ID NAME,NAME...
func parse(text string) (*index, error) {
	ix := &index{roots: map[string]*Node{}}
	nodes := map[string]*Node{}
	node := func(id string) *Node {
		n := nodes[id]
		if n == nil {
			n = &Node{}
			nodes[id] = n
		}
		return n
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "type" && len(f) == 4:
			ix.roots[f[1]+" "+f[2]] = node(f[3])
		case f[0] == "node" && len(f) == 2:
			node(f[1])
		case f[0] == "node" && len(f) == 3:
			node(f[1]).keys = strings.Split(f[2], ",")
		case f[0] == "field" && len(f) == 4:
			n := node(f[1])
			if f[2] == "*" {
				n.any = node(f[3])
				continue
			}
			if n.fields == nil {
				n.fields = map[string]*Node{}
			}
			n.fields[f[2]] = node(f[3])
		case f[0] == "elems" && len(f) == 3:
			node(f[1]).elems = node(f[2])
		case f[0] == "names" && len(f) == 3:
			n := node(f[1])
			n.names = map[string]bool{}
			for _, name := range strings.Split(f[2], ",") {
				n.names[name] = true
			}
		default:
			return nil, &lineError{line}
		}
	}
	return ix, nil
}

type lineError struct{ line string }

func (e *lineError) Error() string { return "cannot read " + e.line }
