package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A structured file is decrypted as sops' stores read and write it, so that it comes back byte
// for byte as kustomize-controller writes it (a generator's hashed name is made from those
// bytes): the file is read into sops' ordered tree (keys in the file's order, comments as items
// of their own), its values decrypted in place (decryptTree), and the tree written again as
// sops' store for the format writes it. Here YAML (indented by 4, with sops' own comment
// placement; anchors and aliases resolved, the values' quoting the emitter's, as in sops); JSON
// in json.go, INI in ini.go, dotenv in files.go.
// xref: getsops/sops v3.13.2 stores/yaml/store.go, sops.go walkBranch.

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
		// Each document decoded once as a value too, before its aliases are followed below:
		// the decoder refuses a document whose aliases expand beyond reason (a pull request's
		// file could ask for more memory than there is).
		var v any
		if err := doc.Decode(&v); err != nil {
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

// pending gathers the comments met before the next entry of a mapping or sequence and
// attaches them as sops does: the first entry's to the collection's head, then each to the
// entry's head (its key's, in a mapping) and, inline ones, to its value's line; what is left at
// the end below the last entry.
type pending struct {
	head, inline []string
	started      bool
}

func (p *pending) add(c comment) {
	if c.inline {
		p.inline = append(p.inline, c.value)
	} else {
		p.head = append(p.head, c.value)
	}
}

// entry attaches the pending comments to the entry about to be added to n: above is the node
// that starts it (an item, or a key), value the node that ends its line.
func (p *pending) entry(n, above, value *yaml.Node) {
	if !p.started {
		p.head = addComments(&n.HeadComment, p.head, true)
		p.started = true
	}
	p.head = addComments(&above.HeadComment, p.head, true)
	p.inline = addComments(&value.LineComment, p.inline, false)
}

// end attaches what is left: to n's head when it has no entry, else below last.
func (p *pending) end(n, last *yaml.Node) {
	rest := append(p.head, p.inline...)
	switch {
	case len(rest) == 0:
	case !p.started:
		addComments(&n.HeadComment, rest, true)
	default:
		addComments(&last.FootComment, rest, false)
	}
}

// appendSequence fills a sequence node (sops appendSequence).
func appendSequence(l []any, n *yaml.Node) {
	var p pending
	var last *yaml.Node
	for _, e := range l {
		if c, ok := e.(comment); ok {
			p.add(c)
			continue
		}
		last = valueNode(e)
		p.entry(n, last, last)
		n.Content = append(n.Content, last)
	}
	p.end(n, last)
}

// appendBranch fills a mapping node (sops appendTreeBranch).
func appendBranch(b branch, n *yaml.Node) {
	var p pending
	var last *yaml.Node
	for _, it := range b {
		if c, ok := it.key.(comment); ok {
			p.add(c)
			continue
		}
		last = &yaml.Node{}
		_ = last.Encode(it.key)
		vn := valueNode(it.value)
		p.entry(n, last, vn)
		n.Content = append(n.Content, last, vn)
	}
	p.end(n, last)
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
				v[i].key = decryptComment(c, key, ad)
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
				v[i] = decryptComment(c, key, ad)
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

// decryptComment is a comment decrypted, or as written when it does not open (sops keeps it
// then); a decrypted comment loses its inline mark, as in sops.
func decryptComment(c comment, key []byte, ad string) comment {
	if encrypted.MatchString(c.value) {
		if s, typ, err := decryptTyped(c.value, key, ad); err == nil && typ == "comment" {
			return comment{value: s}
		}
	}
	return c
}

// typedValue is a decrypted value as sops' cipher returns it for its type.
func typedValue(s, typ, ad string) (any, error) {
	switch typ {
	case "comment":
		// sops writes an encrypted comment of a list as an item of its own, which decrypts to a
		// comment again.
		return comment{value: s}, nil
	case "time":
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
