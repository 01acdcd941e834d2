package manifest

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// bom is the UTF-8 byte-order mark, allowed by YAML at the start of a stream or document.
var bom = []byte{0xEF, 0xBB, 0xBF}

// Stream is a multi-document manifest stream split at its document separators. Concatenating
// Sep and Body of every document, in order, gives back the input exactly.
type Stream struct {
	Docs []*Document
}

// Split splits a stream at its `---` separator lines without parsing any document.
//
// A separator is a line that starts, at column 0, with `---` followed by the end of the line,
// a space or a tab (`--- # comment` included). A `---` that is indented (inside a block scalar)
// is content. A line starting with `---` glued to text (`---apiVersion: v1`) is an error: YAML
// reads it as content while Helm's own splitter reads it as a separator, so the two disagree
// about what the stream holds.
//
// Split also rejects input that cannot be YAML at all: invalid UTF-8 and control characters
// (NUL and friends), naming the document and line.
func Split(in []byte) (*Stream, error) {
	s := &Stream{}
	docStart, sepEnd, docLine := 0, 0, 1 // in[docStart:sepEnd] is the current document's separator line
	line := 1
	for pos := 0; pos < len(in); line++ {
		next := len(in)
		if nl := bytes.IndexByte(in[pos:], '\n'); nl >= 0 {
			next = pos + nl + 1
		}
		if hasSeparatorPrefix(in[pos:next]) {
			rest := bytes.TrimPrefix(in[pos:next], bom)[3:]
			if len(rest) > 0 && !isSpaceOrEOL(rest[0]) {
				text := bytes.TrimRight(in[pos:next], "\r\n")
				if len(text) > 40 {
					text = append(text[:40:40], "..."...)
				}
				return nil, fmt.Errorf("line %d: %q: a document separator must be followed by a space or the end of the line; put a newline after \"---\"", line, text)
			}
			if pos > 0 {
				s.Docs = append(s.Docs, newDocument(len(s.Docs), docLine, in[docStart:sepEnd], in[sepEnd:pos]))
			}
			docStart, sepEnd, docLine = pos, next, line
		}
		pos = next
	}
	s.Docs = append(s.Docs, newDocument(len(s.Docs), docLine, in[docStart:sepEnd], in[sepEnd:]))
	for _, d := range s.Docs {
		if err := checkText(d); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// hasSeparatorPrefix reports whether b starts with "---", allowing a leading byte-order mark.
func hasSeparatorPrefix(b []byte) bool {
	b = bytes.TrimPrefix(b, bom)
	return len(b) >= 3 && b[0] == '-' && b[1] == '-' && b[2] == '-'
}

func isSpaceOrEOL(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// checkText rejects bytes that no YAML document may hold: invalid UTF-8 and C0 control
// characters other than tab, line feed and carriage return, and DEL.
func checkText(d *Document) error {
	bodyLine := d.Line
	if len(d.Sep) > 0 {
		bodyLine++
	}
	for _, part := range []struct {
		b    []byte
		line int
	}{{d.Sep, d.Line}, {d.Body, bodyLine}} {
		lineAt := func(off int) int { return part.line + bytes.Count(part.b[:off], []byte{'\n'}) }
		if !utf8.Valid(part.b) {
			return fmt.Errorf("%s: line %d: invalid UTF-8 (binary data?); a manifest must be UTF-8 text", d.Name(), lineAt(firstInvalidUTF8(part.b)))
		}
		for i, c := range part.b {
			if notText[c] {
				return fmt.Errorf("%s: line %d: control character %#02x is not allowed in YAML (binary data?)", d.Name(), lineAt(i), c)
			}
		}
	}
	return nil
}

// notText marks the bytes checkText rejects, for one table lookup per byte.
var notText = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t' && c != '\n' && c != '\r'
	}
	t[0x7f] = true
	return t
}()

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// Bytes writes the stream back: every untouched document exactly as it came in, every changed
// document re-serialised. It fails only if a changed document cannot be encoded.
func (s *Stream) Bytes() ([]byte, error) {
	n := 0
	for _, d := range s.Docs {
		n += len(d.Sep) + len(d.Body)
	}
	out := make([]byte, 0, n+n/16)
	for _, d := range s.Docs {
		if !d.changed {
			out = append(out, d.Sep...)
			out = append(out, d.Body...)
			continue
		}
		enc, err := d.encode()
		if err != nil {
			return nil, err
		}
		out = append(out, enc...)
	}
	return out, nil
}

// Append adds a generated document at the end of the stream: body is its YAML, origin names
// it in messages ("helm-drift self"). It is written as "---" and body, after a line break if
// the stream does not end with one.
func (s *Stream) Append(body []byte, origin string) {
	sep := []byte("---\n")
	if n := len(s.Docs); n > 0 {
		last := s.Docs[n-1]
		tail := last.Body
		if len(tail) == 0 {
			tail = last.Sep
		}
		if len(tail) > 0 && tail[len(tail)-1] != '\n' {
			sep = []byte("\n---\n")
		}
	}
	s.Docs = append(s.Docs, &Document{Index: len(s.Docs), Sep: sep, Body: body, Origin: origin})
}

// Changed reports how many documents a transform changed.
func (s *Stream) Changed() int {
	n := 0
	for _, d := range s.Docs {
		if d.changed {
			n++
		}
	}
	return n
}
