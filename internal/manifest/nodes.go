package manifest

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxMergeDepth bounds how far lookups follow YAML merge keys (<<) through aliases.
const maxMergeDepth = 16

// Deref follows an alias to the node it names.
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	return n
}

// Lookup returns the value stored under key in mapping n (the node as written, which may be an
// alias), looking through merge keys the way a YAML reader does: a key written in the mapping
// wins over a merged one. nil when absent or when n is not a mapping.
func Lookup(n *yaml.Node, key string) *yaml.Node {
	return lookupDepth(n, key, 0)
}

func lookupDepth(n *yaml.Node, key string, depth int) *yaml.Node {
	n = Deref(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key && k.Tag != "!!merge" {
			return n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind != yaml.ScalarNode || k.Value != "<<" {
			continue
		}
		merged := Deref(n.Content[i+1])
		sources := []*yaml.Node{merged}
		if merged != nil && merged.Kind == yaml.SequenceNode {
			sources = merged.Content
		}
		for _, src := range sources {
			if v := lookupDepth(src, key, depth+1); v != nil {
				return v
			}
		}
	}
	return nil
}

// Scalar returns the string value of a scalar field, "" when absent or not a scalar.
func Scalar(n *yaml.Node, key string) string {
	v := Deref(Lookup(n, key))
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// StringMap returns a mapping of scalars as a Go map (labels, annotations).
func StringMap(n *yaml.Node) map[string]string {
	n = Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	m := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := Deref(n.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode {
			m[n.Content[i].Value] = v.Value
		}
	}
	return m
}

// SetField sets key in mapping n to v: it replaces the value where the key is written in n,
// else appends the key (which then wins over a merged one).
func SetField(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// KindName describes a node kind for messages.
func KindName(n *yaml.Node) string {
	switch Deref(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "a scalar"
	}
	return "not a mapping"
}

// Item is one Kubernetes object of a document's node: the document itself, or an item of a
// List.
type Item struct {
	Node *yaml.Node
	Item int // -1: the document itself
}

// Items returns the objects a document's node holds: the items of a List kind (which Helm
// applies one by one), or the document itself.
func Items(root *yaml.Node) []Item {
	if kind := Scalar(root, "kind"); kind == "List" || (strings.HasSuffix(kind, "List") && Lookup(root, "items") != nil) {
		items := Deref(Lookup(root, "items"))
		if items == nil || items.Kind != yaml.SequenceNode {
			return nil
		}
		objs := make([]Item, 0, len(items.Content))
		for i, it := range items.Content {
			objs = append(objs, Item{Node: it, Item: i})
		}
		return objs
	}
	return []Item{{Node: root, Item: -1}}
}
