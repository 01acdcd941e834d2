package manifest

import "bytes"

// crdNames is what the identities of a stream need from a CustomResourceDefinition: the group
// and kind it defines and their scope.
type crdNames struct {
	group, kind, scope string
}

// crdOf reads a CustomResourceDefinition's spec.group, spec.names.kind and spec.scope. A CRD's
// schema is most of its text (a chart's CRDs are often most of its stream), so a document
// nobody parsed is read by scanCRD, which skips the schema line by line; an object already
// parsed, a List item, or a document the scanner cannot read with certainty is read from its
// parsed node.
func crdOf(o Object) (crdNames, error) {
	if o.Node == nil && o.Item < 0 && !o.Doc.Parsed() {
		if c, ok := scanCRD(o.Doc); ok {
			return c, nil
		}
	}
	n, err := o.Parsed()
	if err != nil {
		return crdNames{}, err
	}
	spec := Lookup(n, "spec")
	return crdNames{group: Scalar(spec, "group"), kind: Scalar(Lookup(spec, "names"), "kind"), scope: Scalar(spec, "scope")}, nil
}

// scanCRD reads spec.group, spec.names.kind and spec.scope from a block-style document line by
// line, giving the values the parser would. ok is false when the document holds anything that
// could make a line mean something else than it looks: a quoted scalar or flow collection that
// does not end on its line, a tab indent, an anchor, alias or flow style where the three fields
// are, a duplicate key; then the caller parses. Block scalars (a schema's descriptions) are
// skipped by their indentation, as YAML defines them.
func scanCRD(d *Document) (c crdNames, ok bool) {
	if len(d.Sep) > 0 {
		if rest := bytes.TrimSpace(d.Sep[3:]); len(rest) > 0 && rest[0] != '#' {
			return c, false // content on the separator line
		}
	}
	body := bytes.TrimPrefix(d.Body, []byte{0xEF, 0xBB, 0xBF})
	const none = -1
	var (
		sawSpec, sawGroup, sawScope, sawNames, sawKind bool
		started                                        bool // a content line was read
		inSpec, inNames                                bool
		specIndent, namesIndent                        = none, none
		blockAt                                        = none // a scalar's key indent: deeper lines are its text
		scalarAt                                       = none // a field's key with an inline scalar: a deeper line continues it
		emptyAt                                        = none // a key with no inline value: a "- " line at its indent is its sequence
		quote                                          quoted // a quoted scalar that goes on past its line
	)
	for len(body) > 0 {
		var line []byte
		var indent int
		line, body, indent = nextLine(body)
		trimmed := line[indent:]
		if quote.open() {
			if rest, closed := quote.scan(line); closed && len(bytes.TrimSpace(stripComment(rest))) != 0 {
				return c, false // more after a multi-line scalar: let the parser read it
			}
			continue // the scalar's text, whatever its indent
		}
		if blockAt != none {
			if len(bytes.TrimSpace(trimmed)) == 0 || indent > blockAt {
				continue // a block scalar's text, blank lines included
			}
			blockAt = none
		}
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		if trimmed[0] == '\t' {
			return c, false
		}
		if scalarAt != none && indent > scalarAt {
			return c, false
		}
		scalarAt = none
		if !started {
			if indent != 0 {
				return c, false // the whole document indented: only the parser knows its levels
			}
			started = true
		}

		// Which level the line is at: the top, spec's keys, spec.names' keys, or deeper.
		level, deep := 0, false
		switch {
		case indent == 0:
			inSpec, inNames = false, false
		case !inSpec:
			deep = true // below a top-level key other than spec
		default:
			if specIndent == none {
				specIndent = indent
			}
			switch {
			case indent < specIndent:
				return c, false // between two levels: not what it seems
			case indent == specIndent:
				level, inNames = 1, false
			case !inNames:
				deep = true // versions, the schema, ...
			default:
				if namesIndent == none {
					namesIndent = indent
				}
				switch {
				case indent < namesIndent:
					return c, false
				case indent > namesIndent:
					deep = true
				}
				level = 2
			}
		}

		// Every line, whatever it is: a quoted scalar that goes on is followed to its end (only
		// below the fields: at their level the parser reads it), a block scalar skipped, a flow
		// collection must end on its line.
		content := dashes(trimmed)
		key, val, isKey := splitKey(content)
		if !isKey {
			val = content
		}
		if len(content) != len(trimmed) && !deep {
			if emptyAt != indent {
				return c, false // a sequence where a mapping's key belongs
			}
			deep = true // the sequence of the key above, at the key's indent: its entries are below the fields
		}
		if opened := openQuote(val); opened.open() {
			if !deep {
				return c, false
			}
			quote = opened
			continue
		}
		if !endsOnLine(val) {
			return c, false
		}
		switch {
		case isKey && isBlockHeader(val):
			blockAt = indent + len(trimmed) - len(content)
		case deep && isKey && inlineScalar(val):
			blockAt = indent + len(trimmed) - len(content) // deeper lines continue a plain scalar
		case deep && !isKey:
			blockAt = indent // a sequence entry's scalar: deeper lines continue it
		}
		if deep {
			continue
		}
		if !isKey {
			return c, false
		}
		emptyAt = none
		if len(bytes.TrimSpace(stripComment(val))) == 0 {
			emptyAt = indent
		} else if inlineScalar(val) {
			scalarAt = indent
		}
		switch level {
		case 0:
			if string(key) == "spec" {
				if sawSpec || emptyAt != 0 {
					return c, false // a duplicate, or a flow mapping, alias or tag
				}
				sawSpec, inSpec = true, true
			}
		case 1:
			field := &c.group
			seen := &sawGroup
			switch string(key) {
			case "group":
			case "scope":
				field, seen = &c.scope, &sawScope
			case "names":
				if sawNames || emptyAt != indent {
					return c, false
				}
				sawNames, inNames, namesIndent = true, true, none
				continue
			default:
				continue
			}
			v, ok := plainScalar(val)
			if !ok || *seen {
				return c, false
			}
			*seen, *field = true, string(v)
		case 2:
			if string(key) == "kind" {
				v, ok := plainScalar(val)
				if !ok || sawKind {
					return c, false
				}
				sawKind, c.kind = true, string(v)
			}
		}
	}
	return c, true
}

// dashes drops the "- " of sequence entries in front of a line's content.
func dashes(b []byte) []byte {
	for len(b) > 0 && b[0] == '-' && (len(b) == 1 || b[1] == ' ') {
		b = bytes.TrimLeft(b[1:], " ")
	}
	return b
}

// isBlockHeader reports whether a key's value is a block scalar's header (| or >, with its
// indicators and a comment).
func isBlockHeader(val []byte) bool {
	v := bytes.TrimSpace(stripComment(val))
	return len(v) > 0 && (v[0] == '|' || v[0] == '>')
}

// quoted is the state of a quoted scalar that spans lines: its quote character, and whether
// a double-quoted one's last line ended in an escape.
type quoted struct {
	char    byte
	escaped bool
}

func (q quoted) open() bool { return q.char != 0 }

// openQuote returns the state after a value: open when it starts a quoted scalar that its line
// does not close (a value that closes it, or starts no quote, gives a closed state).
func openQuote(val []byte) quoted {
	v := bytes.TrimSpace(val)
	if len(v) == 0 || (v[0] != '"' && v[0] != '\'') {
		return quoted{}
	}
	q := quoted{char: v[0]}
	if _, closed := q.scan(v[1:]); closed {
		return quoted{}
	}
	return q
}

// scan reads one more line of the scalar; closed says whether the line closes it, rest is what
// follows the closing quote. An open scalar's state is kept in q.
func (q *quoted) scan(line []byte) (rest []byte, closed bool) {
	i := 0
	if q.escaped {
		q.escaped = false // an escaped line break: the line goes on the scalar
	}
	for ; i < len(line); i++ {
		switch c := line[i]; {
		case q.char == '"' && c == '\\':
			if i+1 == len(line) {
				q.escaped = true
				return nil, false
			}
			i++
		case c == q.char:
			if q.char == '\'' && i+1 < len(line) && line[i+1] == '\'' {
				i++ // '' is a quote inside single quotes
				continue
			}
			q.char = 0
			return line[i+1:], true
		}
	}
	return nil, false
}

// endsOnLine reports whether a value that opens a flow collection closes it on the same line;
// any other value ends on its line as far as the scanner cares (a quoted scalar that goes on is
// openQuote's to follow). Unsure answers are false.
func endsOnLine(val []byte) bool {
	v := bytes.TrimSpace(val)
	if len(v) == 0 {
		return true
	}
	switch v[0] {
	case '[', '{':
		depth := 0
		for i := 0; i < len(v); i++ {
			switch v[i] {
			case '[', '{':
				depth++
			case ']', '}':
				if depth--; depth == 0 {
					return true
				}
			case '"', '\'':
				return false // quotes inside a flow collection: let the parser read it
			}
		}
		return false
	case '&', '*', '!':
		return false // anchors, aliases and tags: let the parser read them
	}
	return true
}
