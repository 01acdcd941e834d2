package sops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A YAML or JSON file is decrypted as sops' stores read and write it, so that it comes back
// byte for byte as kustomize-controller writes it (a generator's hashed name is made from those
// bytes): the file is read into sops' ordered tree (keys in the file's order, comments as items
// of their own), its values decrypted in place, and the tree written again as sops' store for
// the format writes it (YAML indented by 4, JSON by a tab, each with sops' own comment
// placement). Anchors and aliases are resolved, and the values' quoting is the emitter's, as in
// sops.
// xref: getsops/sops v3.13.2 stores/yaml/store.go, stores/json/store.go, sops.go walkBranch.

// branch is an ordered mapping: sops.TreeBranch.
type branch []item

// item is one entry of a branch; its key is a string, or a comment (its value then nil).
type item struct {
	key   any
	value any
}

// comment is a comment line without its '#'; inline: it was written after a value.
type comment struct {
	value  string
	inline bool
}

// yamlIndent is the indent sops writes YAML with (stores/yaml IndentDefault), which
// kustomize-controller does not change.
const yamlIndent = 4

// loadYAML reads a YAML file's documents into branches, as sops' YAML store LoadPlainFile.
func loadYAML(data []byte) ([]branch, error) {
	if len(data) > 0 {
		// As sops: a decode into a map first, which refuses duplicate keys.
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(map[string]any{}); err != nil {
			return nil, err
		}
	}
	var out []branch
	d := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := appendNode(&doc, branch{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

// commentItems are a node's comment lines as branch items (sops appendCommentToMap).
func commentItems(text string, b branch, inline bool) branch {
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			b = append(b, item{key: comment{value: line[1:], inline: inline}})
		}
	}
	return b
}

// commentValues are a node's comment lines as sequence items (sops appendCommentToList).
func commentValues(text string, l []any, inline bool) []any {
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			l = append(l, comment{value: line[1:], inline: inline})
		}
	}
	return l
}

// nodeValue is a node as a tree value (sops nodeToTreeValue).
func nodeValue(n *yaml.Node, commentsHandled bool) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commentsHandled {
			l = commentValues(n.HeadComment, l, false)
			l = commentValues(n.LineComment, l, false)
		}
		for _, e := range n.Content {
			l = commentValues(e.HeadComment, l, false)
			l = commentValues(e.LineComment, l, true)
			v, err := nodeValue(e, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = commentValues(e.FootComment, l, false)
		}
		if !commentsHandled {
			l = commentValues(n.FootComment, l, false)
		}
		return l, nil
	case yaml.MappingNode:
		return appendNode(n, branch{}, commentsHandled)
	case yaml.ScalarNode:
		var v any
		_ = n.Decode(&v)
		return v, nil
	case yaml.AliasNode:
		return nodeValue(n.Alias, false)
	}
	return nil, nil
}

// appendNode appends a document or mapping node's entries to b (sops
// appendYamlNodeToTreeBranch).
func appendNode(n *yaml.Node, b branch, commentsHandled bool) (branch, error) {
	var err error
	if !commentsHandled {
		b = commentItems(n.HeadComment, b, false)
		b = commentItems(n.LineComment, b, false)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, e := range n.Content {
			if b, err = appendNode(e, b, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("YAML documents that are sequences are not supported")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			b = commentItems(k.HeadComment, b, false)
			b = commentItems(k.LineComment, b, false)
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				b = commentItems(v.HeadComment, b, false)
				b = commentItems(v.LineComment, b, true)
			}
			var key any
			_ = k.Decode(&key)
			val, err := nodeValue(v, scalar)
			if err != nil {
				return nil, err
			}
			b = append(b, item{key: key, value: val})
			if scalar {
				b = commentItems(v.FootComment, b, false)
			}
			b = commentItems(k.FootComment, b, false)
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return b, nil
		}
		return nil, errors.New("YAML documents that are values are not supported")
	case yaml.AliasNode:
		if b, err = appendNode(n.Alias, b, false); err != nil {
			return nil, err
		}
	}
	if !commentsHandled {
		b = commentItems(n.FootComment, b, false)
	}
	return b, nil
}

// emitYAML writes branches as sops' YAML store EmitPlainFile.
func emitYAML(bs []branch) ([]byte, error) {
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(yamlIndent)
	for _, b := range bs {
		mapping := &yaml.Node{Kind: yaml.MappingNode}
		appendBranch(b, mapping)
		if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping}}); err != nil {
			return nil, err
		}
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// valueNode is a tree value as a node (sops treeValueToNode).
func valueNode(v any) *yaml.Node {
	switch v := v.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		appendBranch(v, n)
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		appendSequence(v, n)
		return n
	}
	n := &yaml.Node{}
	_ = n.Encode(v)
	return n
}

// addComments joins comment lines onto a node's head, line or foot comment.
func addComments(to *string, lines []string, before bool) []string {
	if len(lines) == 0 {
		return nil
	}
	c := "#" + strings.Join(lines, "\n#")
	switch {
	case *to == "":
		*to = c
	case before:
		*to = c + "\n" + *to
	default:
		*to += "\n" + c
	}
	return nil
}

// appendSequence fills a sequence node (sops appendSequence).
func appendSequence(l []any, n *yaml.Node) {
	var head, inline []string
	beginning := true
	for _, e := range l {
		if c, ok := e.(comment); ok {
			if c.inline {
				inline = append(inline, c.value)
			} else {
				head = append(head, c.value)
			}
			continue
		}
		if beginning {
			head = addComments(&n.HeadComment, head, true)
			beginning = false
		}
		en := valueNode(e)
		head = addComments(&en.HeadComment, head, true)
		inline = addComments(&en.LineComment, inline, false)
		n.Content = append(n.Content, en)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if beginning {
			addComments(&n.HeadComment, head, true)
		} else {
			addComments(&n.Content[len(n.Content)-1].FootComment, head, false)
		}
	}
}

// appendBranch fills a mapping node (sops appendTreeBranch).
func appendBranch(b branch, n *yaml.Node) {
	var head, inline []string
	beginning := true
	for _, it := range b {
		if c, ok := it.key.(comment); ok {
			if c.inline {
				inline = append(inline, c.value)
			} else {
				head = append(head, c.value)
			}
			continue
		}
		if beginning {
			head = addComments(&n.HeadComment, head, true)
			beginning = false
		}
		kn := &yaml.Node{}
		_ = kn.Encode(it.key)
		head = addComments(&kn.HeadComment, head, true)
		vn := valueNode(it.value)
		inline = addComments(&vn.LineComment, inline, false)
		n.Content = append(n.Content, kn, vn)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if beginning {
			addComments(&n.HeadComment, head, true)
		} else {
			addComments(&n.Content[len(n.Content)-2].FootComment, head, false)
		}
	}
}

// loadJSON reads a JSON file's object into a branch, as sops' JSON store LoadPlainFile (numbers
// as ints when they are integers of int64's range, else float64).
func loadJSON(data []byte) (branch, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object: sops reads only files of a top-level object")
	}
	return jsonObject(dec)
}

func jsonObject(dec *json.Decoder) (branch, error) {
	var b branch
	for {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if d, ok := t.(json.Delim); ok && d == '}' {
			return b, nil
		}
		k, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("expected a JSON object key, got %T", t)
		}
		v, err := jsonValue(dec)
		if err != nil {
			return nil, err
		}
		b = append(b, item{key: k, value: v})
	}
}

func jsonValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		return jsonObject(dec)
	case json.Delim('['):
		l := []any{}
		for dec.More() {
			v, err := jsonValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.Token() // ]
		return l, err
	}
	if n, ok := t.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return int(i), nil
		}
		return n.Float64()
	}
	return t, nil
}

// emitJSON writes a branch as sops' JSON store EmitPlainFile: its own encoding, in order and
// without comments, indented by a tab, a line break at the end.
func emitJSON(b branch) ([]byte, error) {
	raw, err := jsonEncode(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "\t"); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func jsonEncode(v any) ([]byte, error) {
	var parts []string
	switch v := v.(type) {
	case branch:
		for _, it := range v {
			k, ok := it.key.(string)
			if !ok {
				continue // a comment
			}
			ev, err := jsonEncode(it.value)
			if err != nil {
				return nil, err
			}
			ek, _ := json.Marshal(k)
			parts = append(parts, string(ek)+": "+string(ev))
		}
		return []byte("{" + strings.Join(parts, ",") + "}"), nil
	case []any:
		for _, e := range v {
			if _, ok := e.(comment); ok {
				continue
			}
			ev, err := jsonEncode(e)
			if err != nil {
				return nil, err
			}
			parts = append(parts, string(ev))
		}
		return []byte("[" + strings.Join(parts, ",") + "]"), nil
	}
	return json.Marshal(v)
}

// extractMetadata removes the sops entry of every branch and returns the first one's, as a
// plain map (sops stores.ExtractMetadata).
func extractMetadata(bs []branch) (map[string]any, error) {
	var meta map[string]any
	for i, b := range bs {
		kept := b[:0:0]
		for _, it := range b {
			if it.key == "sops" {
				if i == 0 {
					if meta != nil {
						return nil, errors.New("two sops entries")
					}
					m, ok := plain(it.value).(map[string]any)
					if !ok {
						return nil, errors.New("its sops entry is not a mapping")
					}
					meta = m
				}
				continue
			}
			kept = append(kept, it)
		}
		bs[i] = kept
	}
	if meta == nil {
		return nil, errors.New("not SOPS-encrypted: no sops metadata")
	}
	return meta, nil
}

// plain is a tree value as maps and slices, without comments.
func plain(v any) any {
	switch v := v.(type) {
	case branch:
		m := map[string]any{}
		for _, it := range v {
			if k, ok := it.key.(string); ok {
				m[k] = plain(it.value)
			}
		}
		return m
	case []any:
		var l []any
		for _, e := range v {
			if _, ok := e.(comment); !ok {
				l = append(l, plain(e))
			}
		}
		return l
	}
	return v
}

// decryptTree decrypts each encrypted value and comment of a tree in place, its path (keys from
// the root; a list's items share their list's path) as additional data, as sops' Tree.Decrypt
// walks it. A comment that does not open is kept as written, as sops keeps it.
func decryptTree(v any, path []string, key []byte) (any, error) {
	ad := strings.Join(path, ":") + ":"
	switch v := v.(type) {
	case branch:
		for i, it := range v {
			if c, ok := it.key.(comment); ok {
				if encrypted.MatchString(c.value) {
					if s, typ, err := decryptTyped(c.value, key, ad); err == nil && typ == "comment" {
						v[i].key = comment{value: s} // sops keeps no inline mark on a decrypted comment
					}
				}
				continue
			}
			k, ok := it.key.(string)
			if !ok {
				return nil, fmt.Errorf("%s: a key that is not a string", strings.TrimSuffix(ad, ":"))
			}
			d, err := decryptTree(it.value, append(path[:len(path):len(path)], k), key)
			if err != nil {
				return nil, err
			}
			v[i].value = d
		}
		return v, nil
	case []any:
		for i, e := range v {
			if c, ok := e.(comment); ok {
				if encrypted.MatchString(c.value) {
					if s, typ, err := decryptTyped(c.value, key, ad); err == nil && typ == "comment" {
						v[i] = comment{value: s}
					}
				}
				continue
			}
			d, err := decryptTree(e, path, key)
			if err != nil {
				return nil, err
			}
			v[i] = d
		}
		return v, nil
	case string:
		if !encrypted.MatchString(v) {
			return v, nil
		}
		s, typ, err := decryptTyped(v, key, ad)
		if err != nil {
			return nil, err
		}
		return typedValue(s, typ, ad)
	}
	return v, nil
}

// typedValue is a decrypted value as sops' cipher returns it for its type.
func typedValue(s, typ, ad string) (any, error) {
	if typ == "time" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, fmt.Errorf("%s: a time that does not parse", strings.TrimSuffix(ad, ":"))
		}
		return t, nil
	}
	v, err := scalar(s, typ, ad)
	if n, ok := v.(int64); ok {
		return int(n), err
	}
	return v, err
}
