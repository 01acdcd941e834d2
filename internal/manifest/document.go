package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FilenameAnnotation is the annotation Helm 4 puts on every document it hands a post-renderer,
// naming the template the document came from. It must come back untouched.
const FilenameAnnotation = "postrenderer.helm.sh/postrender-filename"

// Document is one document of a stream: its separator line (empty for a first document that
// has none) and its body, exactly as read.
type Document struct {
	// Index is the document's position in the stream, from 0.
	Index int
	// Line is the line of the stream on which the document (its separator) starts, from 1.
	Line int
	// Sep is the separator line, with its line ending; empty when the document has none.
	Sep []byte
	// Body is everything after the separator line up to the next separator line.
	Body []byte
	// Origin names a document a transform appended ("helm-drift self"); empty for input.
	Origin string

	node    *yaml.RNode
	parsed  bool
	changed bool
}

func newDocument(index, line int, sep, body []byte) *Document {
	return &Document{Index: index, Line: line, Sep: sep, Body: body}
}

// Detached is the document with bytes of its own (unparsed): what a caller keeps of a stream
// whose other documents it lets go, without holding the whole stream's bytes.
func (d *Document) Detached() *Document {
	return &Document{Index: d.Index, Line: d.Line, Sep: bytes.Clone(d.Sep), Body: bytes.Clone(d.Body), Origin: d.Origin}
}

// Contains reports whether the document's bytes contain sub. It is how a transform skips,
// without parsing, a document it cannot apply to.
func (d *Document) Contains(sub []byte) bool {
	return bytes.Contains(d.Body, sub) || bytes.Contains(d.Sep, sub)
}

// Source is the template the document came from: Helm's `# Source:` comment, else Helm 4's
// postrender-filename annotation; empty when neither is there. It does not parse the document.
func (d *Document) Source() string {
	if v := lineValue(d.Body, "# Source: "); v != "" {
		return v
	}
	return strings.Trim(lineValue(d.Body, FilenameAnnotation+": "), `"'`)
}

// lineValue returns what follows prefix on the first line whose trimmed text starts with it.
func lineValue(b []byte, prefix string) string {
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return ""
	}
	if j := bytes.LastIndexByte(b[:i], '\n'); len(bytes.TrimSpace(b[j+1:i])) != 0 {
		return "" // the prefix is not at the start of its line
	}
	rest := b[i+len(prefix):]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	return string(bytes.TrimSpace(rest))
}

// Name names the document for messages: "document 3 (source: chart/templates/hr.yaml)". The
// number counts from 1, the way a reader counts.
func (d *Document) Name() string {
	name := "document " + strconv.Itoa(d.Index+1)
	if d.Origin != "" {
		return name + " (appended by " + d.Origin + ")"
	}
	if src := d.Source(); src != "" {
		return name + " (source: " + src + ")"
	}
	return name + " (line " + strconv.Itoa(d.Line) + ")"
}

// Node parses the document, once, and returns its root; nil for an empty or comment-only
// document. Aliases are kept as aliases: nothing is expanded.
func (d *Document) Node() (*yaml.RNode, error) {
	if d.parsed {
		return d.node, nil
	}
	src := d.yamlText()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF):
		d.parsed = true
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: invalid YAML: %s", d.Name(), yamlErr(err, d.streamLine))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: holds more than one YAML document (a \"...\" end marker followed by content?); separate documents with \"---\"", d.Name())
	}
	d.node = yaml.NewRNode(&doc)
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		d.node = yaml.NewRNode(doc.Content[0])
		d.node.YNode().HeadComment = joinComments(doc.HeadComment, d.node.YNode().HeadComment)
	}
	d.parsed = true
	return d.node, nil
}

func joinComments(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// sepHasContent reports whether the separator line carries more than a comment
// (`--- !tag` or `--- {a: 1}`), which then belongs to the document's YAML.
func (d *Document) sepHasContent() bool {
	rest := bytes.TrimSpace(bytes.TrimPrefix(d.Sep, bom)[min(len(bytes.TrimPrefix(d.Sep, bom)), 3):])
	return len(rest) > 0 && rest[0] != '#'
}

// YAML returns the document's YAML text (without a byte-order mark), for decoders that do not
// need Node's tree; it does not parse the document.
func (d *Document) YAML() []byte { return d.yamlText() }

// Parsed reports whether Node has parsed the document already.
func (d *Document) Parsed() bool { return d.parsed }

// yamlText is the document's YAML without a byte-order mark, the separator's content included.
func (d *Document) yamlText() []byte {
	body := bytes.TrimPrefix(d.Body, bom)
	if len(d.Sep) == 0 || !d.sepHasContent() {
		return body
	}
	return append(append([]byte{}, bytes.TrimPrefix(d.Sep, bom)...), body...)
}

// yamlErr rewrites a yaml.v3 error's line number ("yaml: line 3: ...") to a stream line.
func yamlErr(err error, line func(int) int) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return msg
	}
	num, tail, ok := strings.Cut(rest, ":")
	n, convErr := strconv.Atoi(num)
	if !ok || convErr != nil {
		return msg
	}
	return fmt.Sprintf("line %d:%s", line(n), tail)
}

// MarkChanged records that a transform changed the document's parsed tree: it is re-serialised
// on write. Call it only after Node.
func (d *Document) MarkChanged() { d.changed = true }

// Changed reports whether the document will be re-serialised.
func (d *Document) Changed() bool { return d.changed }

// encode re-serialises a changed document: its separator line (verbatim when it held only a
// comment or nothing), then its tree in the document's own sequence-indent style, line endings
// and byte-order mark.
func (d *Document) encode() ([]byte, error) {
	if err := checkDup(d.node.YNode(), "", d.streamLine); err != nil {
		return nil, fmt.Errorf("%s: %w (Flux's post-render rejects it too); remove the duplicate key", d.Name(), err)
	}
	var buf bytes.Buffer
	verbatim := 0 // bytes at the start of buf that are copied, not generated
	switch {
	case len(d.Sep) == 0:
	case d.sepHasContent():
		if bytes.HasPrefix(d.Sep, bom) {
			buf.Write(bom)
			verbatim = len(bom)
		}
		buf.WriteString("---\n")
	default:
		buf.Write(d.Sep)
		verbatim = len(d.Sep)
	}
	if bytes.HasPrefix(d.Body, bom) {
		buf.Write(bom)
	}
	style := yaml.SequenceIndentStyle(yaml.DeriveSeqIndentStyle(string(d.Body)))
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: style})
	if err := enc.Encode(d.node.YNode()); err != nil {
		return nil, fmt.Errorf("%s: write YAML: %w", d.Name(), err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%s: write YAML: %w", d.Name(), err)
	}
	out := buf.Bytes()
	if bytes.Contains(d.Body, []byte("\r\n")) {
		crlf := bytes.ReplaceAll(out[verbatim:], []byte("\n"), []byte("\r\n"))
		out = append(out[:verbatim:verbatim], crlf...)
	}
	return out, nil
}

// streamLine turns a line number within the parsed YAML text into a line of the stream.
func (d *Document) streamLine(yamlLine int) int {
	if len(d.Sep) > 0 && !d.sepHasContent() {
		return d.Line + yamlLine
	}
	return d.Line + yamlLine - 1
}

// CheckDuplicateKeys returns an error naming the first mapping key that appears twice in one
// mapping, anywhere in the tree. It does not follow aliases, so it is linear in the document.
func CheckDuplicateKeys(n *yaml.Node) error {
	return checkDup(n, "", func(l int) int { return l })
}

func checkDup(n *yaml.Node, path string, line func(int) int) error {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkDup(c, path, line); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkDup(c, path+"["+strconv.Itoa(i)+"]", line); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Value != "<<" {
				if first, dup := seen[k.Value]; dup {
					return fmt.Errorf("mapping key %q at %s is defined twice (lines %d and %d)", k.Value, pathOrRoot(path), line(first), line(k.Line))
				}
				seen[k.Value] = k.Line
			}
			if err := checkDup(n.Content[i+1], path+"."+k.Value, line); err != nil {
				return err
			}
		}
	}
	return nil
}
func pathOrRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return strings.TrimPrefix(p, ".")
}
