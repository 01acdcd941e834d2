package output

// The scalars of printYAML: the style in which yaml.v2 prints each, and the text it writes.

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// style is how yaml.v2 prints a scalar, of the styles printer writes itself; other for the
// rest, which yaml.v2 prints.
type style int

const (
	other        style = iota
	verbatim           // as it is: a number, a boolean, null, a key yaml.v2 quoted
	plain              // plain, broken at spaces past the wrap width
	singleQuoted       // in single quotes, broken likewise
	literal            // a block of lines ("|" or "|-")
)

// scalarText is the text of v, a scalar, and the style in which yaml.v2 prints it.
func scalarText(v any) (string, style) {
	switch t := v.(type) {
	case nil:
		return "null", verbatim
	case bool:
		return strconv.FormatBool(t), verbatim
	case int64:
		return strconv.FormatInt(t, 10), verbatim
	case uint64:
		return strconv.FormatUint(t, 10), verbatim
	case int:
		return strconv.Itoa(t), verbatim
	case float64:
		// Whole, as sigs.k8s.io/yaml's round trip through JSON makes it; yaml.v2 prints other
		// floats in its own way.
		switch w := wholeNumbers(t).(type) {
		case int64:
			return strconv.FormatInt(w, 10), verbatim
		case uint64:
			return strconv.FormatUint(w, 10), verbatim
		}
	case string:
		return t, stringStyle(t)
	}
	return "", other
}

func scalarStyleOf(v any) style {
	_, s := scalarText(v)
	return s
}

// scalar writes text in its style; breaks at spaces, and a literal's lines, are indented at
// cont (below zero, a key: no breaks).
func (p *printer) scalar(text string, s style, cont int) {
	switch s {
	case verbatim:
		p.write(text)
	case plain, singleQuoted:
		if s == singleQuoted {
			p.write("'")
		}
		spaces := false
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c != ' ' {
				if c == '\'' && s == singleQuoted {
					p.write("'")
				}
				p.buf = append(p.buf, c)
				p.col++
				spaces = false
				continue
			}
			// yaml.v2 breaks at a space that follows a word and is followed by one, past the
			// width (a single-quoted scalar: not at its first or last byte).
			inside := s == plain || i > 0 && i < len(text)-1
			if cont >= 0 && !spaces && p.col > wrapWidth && inside && i+1 < len(text) && text[i+1] != ' ' {
				p.newline(cont)
			} else {
				p.buf = append(p.buf, ' ')
				p.col++
			}
			spaces = true
		}
		if s == singleQuoted {
			p.write("'")
		}
	case literal:
		body, chomp := strings.CutSuffix(text, "\n")
		if chomp {
			p.write("|")
		} else {
			p.write("|-")
		}
		for _, l := range strings.Split(body, "\n") {
			if l == "" {
				p.newline(0)
				continue
			}
			p.newline(cont)
			p.write(l)
		}
	}
}

// stringStyle is the style in which yaml.v2 prints s, of those printer writes (it may say
// other for a string yaml.v2 prints in one of them; it never names a style yaml.v2 would not
// use): printable ASCII only; with line breaks, a literal block without an indentation or a
// keep indicator; without, plain when nothing in it starts a YAML indicator, single-quoted
// when something does, and other when it could read back as a number, a boolean or null.
func stringStyle(s string) style {
	if s == "" {
		return other
	}
	lines := false
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines = true
		} else if s[i] < 0x20 || s[i] > 0x7e {
			return other
		}
	}
	if lines {
		// A space before a break, a trailing space, a leading space or break (an indentation
		// indicator), more than one trailing break ("|+"): yaml.v2 prints something else.
		if strings.Contains(s, " \n") || s[0] == ' ' || s[0] == '\n' || strings.HasSuffix(s, " ") || strings.HasSuffix(s, "\n\n") {
			return other
		}
		return literal
	}
	switch s[0] {
	case '+', '-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return other // may read back as a number: yaml.v2 quotes it, or not
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		if resolvesAsOther[s] {
			return other // double-quoted
		}
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return singleQuoted
	}
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return singleQuoted
	case '?', ':':
		if len(s) == 1 || s[1] == ' ' {
			return singleQuoted
		}
	}
	for i := 1; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') || s[i] == '#' && s[i-1] == ' ' {
			return singleQuoted
		}
	}
	return plain
}

// resolvesAsOther are the words yaml.v2 reads as booleans or null (its resolve table).
var resolvesAsOther = map[string]bool{"~": true}

func init() {
	for _, w := range []string{"y", "yes", "true", "on", "n", "no", "false", "off", "null"} {
		resolvesAsOther[w] = true
		resolvesAsOther[strings.ToUpper(w)] = true
		resolvesAsOther[strings.ToUpper(w[:1])+w[1:]] = true
	}
}

// keyLess orders two string keys as yaml.v2 sorts a mapping's keys (its keyList.Less, for
// strings): at the first rune that differs, letters by code point and after every other rune,
// and runs of digits by the number they spell.
func keyLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return runesLess([]byte(a), []byte(b))
	}
	return runesLess([]rune(a), []rune(b))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func runesLess[R byte | rune](ar, br []R) bool {
	digit := func(r R) bool { return unicode.IsDigit(rune(r)) }
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(rune(ar[i])), unicode.IsLetter(rune(br[i]))
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && digit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && digit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && digit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// wholeNumbers is v with every whole float64 below 1e21 (which JSON writes without an
// exponent) as the int64, or uint64, that its JSON text reads as: what sigs.k8s.io/yaml's
// round trip through JSON makes of it.
func wholeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = wholeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = wholeNumbers(e)
		}
		return out
	case float64:
		if t != math.Trunc(t) || math.Abs(t) >= 1e21 {
			return v
		}
		text := strconv.FormatFloat(t, 'f', -1, 64)
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return u
		}
	}
	return v
}
