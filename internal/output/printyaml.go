package output

import (
	"bytes"
	"sort"
	"strconv"
	"strings"

	"github.com/go-openapi/jsonpointer"
	yamlv2 "go.yaml.in/yaml/v2"
)

// printedYAML is an object printed as YAML, byte for byte as sigs.k8s.io/yaml (kubectl's
// printer) prints it, with the line at which each field asked for begins.
type printedYAML struct {
	text []byte
	at   *field // the fields asked for, each with its line
}

// field is a node of the tree of the JSON pointers asked for: the line at which the field
// begins (-1 until printed), and the fields beneath it.
type field struct {
	line int
	kids map[string]*field
}

// line returns the (0-based) line at which the field ptr names begins, -1 when it was not
// asked for or is not in the object.
func (p *printedYAML) line(ptr string) int {
	f := p.at
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if f = f.kids[jsonpointer.Unescape(seg)]; f == nil {
			return -1
		}
	}
	return f.line
}

// lines are the text's lines, without their line breaks; none for no object.
func (p *printedYAML) lines() []string {
	if len(p.text) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(p.text), "\n"), "\n")
}

// printYAML prints obj as sigs.k8s.io/yaml does, and notes the lines at which the fields that
// pointers name begin.
//
// sigs.k8s.io/yaml goes through JSON and then yaml.v2's emitter, whose queue keeps every event
// of the document: for a CRD of twenty thousand lines, fifty megabytes, and the lines of its
// fields would take a parse of the text as much again. printYAML writes the structure itself
// (block mappings with keys in yaml.v2's order, sequences not indented under their key, empty
// ones as {} and []) and the scalars most objects are made of: plain and single-quoted ones,
// wrapped at column 80 as yaml.v2 wraps them, and literal blocks ("|", "|-"); every other
// scalar (double-quoted, a string that could read as a number, non-ASCII text, a float) it has
// yaml.v2 print, inside single-key mappings that put it at the column it has in the
// document. TestPrintYAMLAsSigs holds the result to sigs.k8s.io/yaml's bytes on every
// object of the test data and the corpus, and FuzzPrintYAML on any object.
func printYAML(obj map[string]any, pointers []string) (*printedYAML, error) {
	root := &field{line: -1}
	for _, ptr := range pointers {
		f := root
		for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			seg = jsonpointer.Unescape(seg)
			kid := f.kids[seg]
			if kid == nil {
				if f.kids == nil {
					f.kids = map[string]*field{}
				}
				kid = &field{line: -1}
				f.kids[seg] = kid
			}
			f = kid
		}
	}
	if len(obj) == 0 {
		return &printedYAML{text: []byte("{}\n"), at: root}, nil
	}
	p := &printer{}
	if err := p.mapping(obj, 0, true, root); err != nil {
		return nil, err
	}
	p.buf = append(p.buf, '\n')
	return &printedYAML{text: p.buf, at: root}, nil
}

// printer writes YAML as yaml.v2's emitter does, for the values that JSON decodes to.
type printer struct {
	buf   []byte
	lines int // the line being written, 0-based
	col   int // its column, as yaml.v2 counts it (in bytes: only ASCII is written here)
}

// wrapWidth is the column after which yaml.v2 breaks a plain scalar at a space.
const wrapWidth = 80

func (p *printer) newline(indent int) {
	p.buf = append(p.buf, '\n')
	for range indent {
		p.buf = append(p.buf, ' ')
	}
	p.lines++
	p.col = indent
}

func (p *printer) write(s string) {
	p.buf = append(p.buf, s...)
	p.col += len(s)
}

// mapping writes m's keys at indent; inline: the first key goes on the line being written
// (a sequence's item, or the document's start).
func (p *printer) mapping(m map[string]any, indent int, inline bool, at *field) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	for i, k := range keys {
		if i > 0 || !inline {
			p.newline(indent)
		}
		kid := at.mark(k, p.lines)
		v := m[k]
		key, keyStyle := k, stringStyle(k)
		if len(k) > 128 || keyStyle == literal {
			keyStyle = other // "? key", or double-quoted
		}
		if keyStyle == other && isCollection(v) {
			key, keyStyle = quotedKey(k)
		}
		if keyStyle == other || !isCollection(v) && scalarStyleOf(v) == other {
			// yaml.v2 prints the key double-quoted or as "? key", or the value in a style
			// printer does not write.
			if err := p.yamlV2(map[string]any{k: wholeNumbers(v)}, indent, indent/2, indent); err != nil {
				return err
			}
			continue
		}
		p.scalar(key, keyStyle, -1)
		p.write(":")
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				p.write(" {}")
				continue
			}
			if err := p.mapping(t, indent+2, false, kid); err != nil {
				return err
			}
		case []any:
			if len(t) == 0 {
				p.write(" []")
				continue
			}
			if err := p.sequence(t, indent, false, kid); err != nil {
				return err
			}
		default:
			p.write(" ")
			text, style := scalarText(v)
			p.scalar(text, style, indent+2)
		}
	}
	return nil
}

// sequence writes s's items, each "- " at indent; inline: the first on the line being
// written (an item of a sequence).
func (p *printer) sequence(s []any, indent int, inline bool, at *field) error {
	for i, v := range s {
		if i > 0 || !inline {
			p.newline(indent)
		}
		kid := at.mark(strconv.Itoa(i), p.lines)
		p.write("- ")
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				p.write("{}")
				continue
			}
			if err := p.mapping(t, indent+2, true, kid); err != nil {
				return err
			}
		case []any:
			if len(t) == 0 {
				p.write("[]")
				continue
			}
			if err := p.sequence(t, indent+2, true, kid); err != nil {
				return err
			}
		default:
			text, style := scalarText(v)
			if style == other {
				if err := p.yamlV2(map[string]any{"x": []any{wholeNumbers(v)}}, indent, indent/2+1, indent+2); err != nil {
					return err
				}
				continue
			}
			p.scalar(text, style, indent+2)
		}
	}
	return nil
}

// mark notes line as the line of the field key beneath f, when it was asked for, and returns
// that field (nil when no field beneath it was asked for).
func (f *field) mark(key string, line int) *field {
	if f == nil {
		return nil
	}
	kid := f.kids[key]
	if kid != nil {
		kid.line = line
	}
	return kid
}

func isCollection(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// quotedKey is k as yaml.v2 prints it as a simple key (double-quoted); other when it prints
// it as "? k".
func quotedKey(k string) (string, style) {
	b, err := yamlv2.Marshal(map[string]string{k: "x"})
	text, ok := strings.CutSuffix(string(b), ": x\n")
	if err != nil || !ok || strings.Contains(text, "\n") {
		return "", other
	}
	return text, verbatim
}

// yamlV2 writes v as yaml.v2 prints it at the column it has here: v is nested in indent/2
// single-key mappings, so that yaml.v2 indents and wraps it as in the document; the first
// skip lines of its text (those mappings' keys) and the first cut bytes of the next (its
// indentation, and "- " for an item) are left out.
func (p *printer) yamlV2(v any, indent, skip, cut int) error {
	for range indent / 2 {
		v = map[string]any{"x": v}
	}
	b, err := yamlv2.Marshal(v)
	if err != nil {
		return err
	}
	for range skip {
		b = b[bytes.IndexByte(b, '\n')+1:]
	}
	b = bytes.TrimSuffix(b[cut:], []byte("\n"))
	p.buf = append(p.buf, b...)
	n := bytes.Count(b, []byte("\n"))
	p.lines += n
	if n > 0 {
		p.col = len(b) - bytes.LastIndexByte(b, '\n') - 1
	} else {
		p.col += len(b)
	}
	return nil
}
