package manifest

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Identity is what makes two manifests one object in the cluster. Version is not part of it:
// apps/v1 and extensions/v1beta1 Deployments of one name are the same object.
type Identity struct {
	Group, Kind, Namespace, Name string
}

// String prints the identity the way kubectl names an object: "Deployment.apps web -n apps",
// shortened to "ConfigMap web -n apps" for the core group and without -n when cluster-scoped.
func (id Identity) String() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return kind + " " + id.Name
	}
	return kind + " " + id.Namespace + "/" + id.Name
}

// Object is one object found in a stream.
type Object struct {
	// Doc is the document it came from; Item its position in a List (-1: the document).
	Doc  *Document
	Item int
	// APIVersion, Kind, Name and Namespace as written (Namespace may be empty).
	APIVersion, Kind, Name, Namespace string
	// Hook is true for a Helm hook (the helm.sh/hook annotation).
	Hook bool
	// Node is the parsed object; nil when the fast path read it without parsing.
	Node *yaml.Node
	// File names the input the document came from, where there are several.
	File string
}

// Where names the object's place for messages: "document 3 (source: c/templates/a.yaml)".
func (o Object) Where() string {
	w := o.Doc.Name()
	if o.File != "" {
		w = o.File + ": " + w
	}
	if o.Item >= 0 {
		w += fmt.Sprintf(", List item %d", o.Item+1)
	}
	return w
}

// Parsed returns the object's parsed node, parsing its document when the line scanner read it.
func (o Object) Parsed() (*yaml.Node, error) {
	if o.Node != nil {
		return o.Node, nil
	}
	root, err := o.Doc.Node()
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, fmt.Errorf("%s: empty document", o.Where())
	}
	return root.YNode(), nil
}

// Decode returns the object as JSON-like maps (numbers as float64, as the API server returns
// them), for comparing with live objects and reading specs.
func (o Object) Decode() (map[string]any, error) {
	if o.Node == nil && o.Item < 0 && !o.Doc.Parsed() {
		// A whole document nobody parsed: decode its text directly, keeping no tree.
		m, err := decodeYAML(o.Doc.YAML())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Where(), err)
		}
		return m, nil
	}
	n, err := o.Parsed()
	if err != nil {
		return nil, err
	}
	text, err := yaml.String(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Where(), err)
	}
	m, err := decodeYAML([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Where(), err)
	}
	return m, nil
}

// Group is the API group of the object's apiVersion ("" for the core group).
func (o Object) Group() string {
	if g, _, ok := strings.Cut(o.APIVersion, "/"); ok {
		return g
	}
	return ""
}

var hookBytes = []byte("helm.sh/hook")

// Objects reads the objects of every document in the stream. Most unparsed documents are read
// by a line scanner that looks only at apiVersion, kind, metadata.name and metadata.namespace and
// stops there; a document it cannot read with certainty (flow style, anchors, escapes, a List,
// a hook annotation) is parsed in full. Empty and comment-only documents hold
// no object.
//
// Large streams are read by one goroutine per CPU, each over its own run of documents; the
// result keeps the stream's order.
func Objects(s *Stream) ([]Object, error) {
	workers := runtime.GOMAXPROCS(0)
	if len(s.Docs) < parallelDocs || workers < 2 {
		return objectsOf(s.Docs)
	}
	per := (len(s.Docs) + workers - 1) / workers
	parts := make([][]Object, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := min(w*per, len(s.Docs)), min((w+1)*per, len(s.Docs))
		wg.Go(func() { parts[w], errs[w] = objectsOf(s.Docs[lo:hi]) })
	}
	wg.Wait()
	objs := make([]Object, 0, len(s.Docs))
	for w := range parts {
		if errs[w] != nil {
			return nil, errs[w] // the first failing document in stream order
		}
		objs = append(objs, parts[w]...)
	}
	return objs, nil
}

// parallelDocs is the stream size from which Objects reads with several goroutines.
const parallelDocs = 2000

func objectsOf(docs []*Document) ([]Object, error) {
	objs := make([]Object, 0, len(docs))
	intern := &strs{chunkSize: min(nameChunk, 32*len(docs))} // a small stream's names, a small chunk
	for _, d := range docs {
		// A document already parsed is read from its tree, which a transform may have changed
		// and its text does not show; only the text of an unparsed one is what it holds.
		if !d.Parsed() {
			if o, ok := scan(d, intern); ok {
				if o.Kind != "" {
					objs = append(objs, o)
				}
				continue
			}
		}
		root, err := d.Node()
		if err != nil {
			return nil, err
		}
		if root == nil || root.YNode().Kind != yaml.MappingNode {
			continue
		}
		for _, it := range Items(root.YNode()) {
			n := it.Node
			if Deref(n) == nil || Deref(n).Kind != yaml.MappingNode {
				continue
			}
			meta := Lookup(n, "metadata")
			o := Object{
				Doc: d, Item: it.Item, Node: n,
				APIVersion: Scalar(n, "apiVersion"),
				Kind:       Scalar(n, "kind"),
				Name:       Scalar(meta, "name"),
				Namespace:  Scalar(meta, "namespace"),
			}
			_, o.Hook = StringMap(Lookup(meta, "annotations"))["helm.sh/hook"]
			if o.Kind != "" {
				objs = append(objs, o)
			}
		}
	}
	return objs, nil
}

// scan is the fast path: it reads apiVersion, kind, metadata.name and metadata.namespace from a
// block-style document line by line, and stops once it has them. ok is false when the
// document holds anything it cannot read with certainty, or a helm.sh/hook annotation; then
// the caller parses it. An empty or comment-only document gives ok and an Object without
// Kind. intern makes the strings it reads.
func scan(d *Document, intern *strs) (Object, bool) {
	o := Object{Doc: d, Item: -1}
	body := bytes.TrimPrefix(d.Body, []byte{0xEF, 0xBB, 0xBF})
	if len(d.Sep) > 0 {
		rest := bytes.TrimSpace(d.Sep[3:])
		if len(rest) > 0 && rest[0] != '#' {
			return o, false // content on the separator line
		}
	}
	var sawAPI, sawKind, sawMeta, sawName, sawNamespace, inMeta, metaDone, content bool
	childIndent := -1
	// scalarAt is the indent of the last key line whose value is an inline scalar (-1: none):
	// a deeper line after it continues that scalar on the next line (a folded plain or quoted
	// scalar), which only the parser reads right.
	scalarAt := -1
	for len(body) > 0 {
		var line []byte
		var indent int
		line, body, indent = nextLine(body)
		trimmed := line[indent:]
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		if trimmed[0] == '\t' {
			return o, false
		}
		if !content && indent > 0 {
			return o, false // the root is indented: a scalar or a nested node, only the parser reads it
		}
		content = true
		if scalarAt >= 0 && indent > scalarAt {
			return o, false
		}
		scalarAt = -1
		if indent == 0 {
			if inMeta {
				inMeta, metaDone = false, true
			}
			key, val, ok := splitKey(trimmed)
			if !ok {
				return o, false
			}
			if inlineScalar(val) {
				scalarAt = 0
			}
			switch string(key) { // no allocation: the compiler compares in place
			case "apiVersion":
				v, ok := plainScalar(val)
				if !ok || sawAPI {
					return o, false
				}
				sawAPI, o.APIVersion = true, intern.interned(v)
			case "kind":
				v, ok := plainScalar(val)
				if !ok || sawKind || bytes.HasSuffix(v, []byte("List")) {
					return o, false
				}
				sawKind, o.Kind = true, intern.interned(v)
			case "metadata":
				if sawMeta || len(bytes.TrimSpace(stripComment(val))) != 0 {
					return o, false // a duplicate, or a flow mapping, alias or tag
				}
				sawMeta, inMeta = true, true
			}
			if sawAPI && sawKind && metaDone {
				return o, true
			}
			continue
		}
		if !inMeta {
			continue
		}
		if childIndent < 0 {
			childIndent = indent
		}
		if indent != childIndent {
			if bytes.HasPrefix(trimQuotes(trimmed), hookBytes) {
				return o, false // perhaps a hook: the parser reads the annotation
			}
			continue // deeper: labels, annotations, a block scalar's lines
		}
		key, val, ok := splitKey(trimmed)
		if !ok {
			return o, false
		}
		if inlineScalar(val) {
			scalarAt = indent
		}
		switch string(key) {
		case "name":
			v, ok := plainScalar(val)
			if !ok || sawName {
				return o, false
			}
			sawName, o.Name = true, intern.copied(v)
		case "namespace":
			v, ok := plainScalar(val)
			if !ok || sawNamespace {
				return o, false
			}
			sawNamespace, o.Namespace = true, intern.interned(v)
		case "annotations":
			if len(bytes.TrimSpace(stripComment(val))) != 0 {
				return o, false // a flow mapping, alias or tag: perhaps a hook; the parser reads it
			}
		}
	}
	if !content {
		return o, true // empty or comment-only: no object
	}
	if !sawKind || !sawAPI || !sawMeta {
		return o, false // not a plain object: let the parser say what it is
	}
	return o, true
}

// nextLine cuts the first line off body and returns it (without its line break and a \r
// before it), what follows it, and its indent in spaces.
func nextLine(body []byte) (line, rest []byte, indent int) {
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		line, rest = body[:i], body[i+1:]
	} else {
		line = body
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	for indent < len(line) && line[indent] == ' ' {
		indent++
	}
	return line, rest, indent
}

// inlineScalar reports whether a key's value is a scalar on the key's own line (not empty, not
// a block scalar's header, not a comment).
func inlineScalar(val []byte) bool {
	v := bytes.TrimSpace(stripComment(val))
	return len(v) > 0 && v[0] != '|' && v[0] != '>'
}

// splitKey splits `key: value` where key is a plain scalar of the characters Kubernetes keys
// use. ok is false for anything else (quoted keys, complex keys, sequences, anchors).
func splitKey(line []byte) ([]byte, []byte, bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || (i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t') {
		return nil, nil, false
	}
	for _, c := range line[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return nil, nil, false
		}
	}
	return line[:i], line[i+1:], true
}

// stripComment removes a trailing " # comment".
func stripComment(v []byte) []byte {
	for i := 0; i < len(v); i++ {
		if v[i] == '#' && (i == 0 || v[i-1] == ' ' || v[i-1] == '\t') {
			return v[:i]
		}
	}
	return v
}

// plainScalar reads a simple scalar value: plain, or quoted without escapes. ok is false for
// anything a line scanner cannot read with certainty (block scalars, flow collections, aliases,
// anchors, tags, escapes, an empty value that continues on the next line).
func plainScalar(v []byte) ([]byte, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil, false
	}
	switch v[0] {
	case '"':
		end := bytes.IndexByte(v[1:], '"')
		if end < 0 || bytes.IndexByte(v[1:end+1], '\\') >= 0 || len(bytes.TrimSpace(stripComment(v[end+2:]))) != 0 {
			return nil, false
		}
		return v[1 : end+1], true
	case '\'':
		end := bytes.IndexByte(v[1:], '\'')
		if end < 0 || len(bytes.TrimSpace(stripComment(v[end+2:]))) != 0 {
			return nil, false // includes '' escapes
		}
		return v[1 : end+1], true
	case '|', '>', '{', '[', '&', '*', '!', '%', '@', '`', '?', '-':
		if v[0] == '-' && len(v) > 1 && v[1] != ' ' {
			break
		}
		return nil, false
	}
	v = bytes.TrimSpace(stripComment(v))
	if len(v) == 0 || bytes.IndexByte(v, '"') >= 0 || bytes.IndexByte(v, '\'') >= 0 {
		return nil, false
	}
	switch string(v) {
	case "null", "~", "Null", "NULL":
		return nil, false
	}
	return v, true
}

// trimQuotes drops the quotes a line starts with (bytes.TrimLeft with a cutset, which builds
// its set on every call).
func trimQuotes(b []byte) []byte {
	for len(b) > 0 && (b[0] == '"' || b[0] == '\'') {
		b = b[1:]
	}
	return b
}

// strs makes the strings a scan reads: apiVersion, kind and namespace interned, each distinct
// one allocated once; names copied into shared chunks, an allocation per chunk, not per name.
// The zero value is ready.
type strs struct {
	seen      map[string]string
	chunk     []byte // names are appended here and never changed
	chunkSize int    // the size of a new chunk (nameChunk when 0)
}

// nameChunk is the largest chunk names are copied into.
const nameChunk = 16 << 10

// interned returns b as a string, allocating it only the first time it is seen.
func (st *strs) interned(b []byte) string {
	if s, ok := st.seen[string(b)]; ok {
		return s
	}
	if st.seen == nil {
		st.seen = map[string]string{}
	}
	s := string(b)
	st.seen[s] = s
	return s
}

// copied returns a copy of b as a string.
func (st *strs) copied(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(st.chunk)-len(st.chunk) {
		size := st.chunkSize
		if size <= 0 {
			size = nameChunk
		}
		if len(b) > size/4 {
			return string(b) // a long one gets its own allocation
		}
		st.chunk = make([]byte, 0, size)
	}
	start := len(st.chunk)
	st.chunk = append(st.chunk, b...)
	// The bytes of chunk[start:] are written once, above, and never again: the string's
	// immutability holds.
	return unsafe.String(&st.chunk[start], len(b))
}
