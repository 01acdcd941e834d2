package sops

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Format is a file format of sops' stores.
type Format int

// The formats sops reads a file in, by its name's extension.
const (
	Binary Format = iota
	Dotenv
	JSON
	YAML
	INI
)

func (f Format) String() string {
	return [...]string{"binary", "dotenv", "JSON", "YAML", "INI"}[f]
}

// FormatForPath is the format sops reads or writes a file of that name in: its extension, binary
// when it has none of sops'; a Docker config's key (.dockerconfigjson) is JSON, as
// kustomize-controller has it.
// xref: getsops/sops v3 cmd/sops/formats FormatForPath; kustomize-controller decryptor.go formatForPath.
func FormatForPath(p string) Format {
	switch {
	case strings.HasSuffix(p, ".dockerconfigjson"):
		return JSON
	}
	switch path.Ext(p) {
	case ".yaml", ".yml":
		return YAML
	case ".json":
		return JSON
	case ".env":
		return Dotenv
	case ".ini":
		return INI
	}
	return Binary
}

// markers are what an encrypted file of each format holds (its MAC), as kustomize-controller
// tells an encrypted file or Secret value by them; a binary file is a JSON envelope.
var markers = []struct {
	format Format
	marker []byte
}{
	{Dotenv, []byte("sops_mac=ENC[")},
	{INI, []byte("[sops]")},
	{YAML, []byte("mac: ENC[")},
	{JSON, []byte(`"mac": "ENC[`)},
}

// Detect tells an encrypted file by its marker: its format, ok false when data holds none.
func Detect(data []byte) (f Format, ok bool) {
	for _, m := range markers {
		if bytes.Contains(data, m.marker) {
			return m.format, true
		}
	}
	return Binary, false
}

// Encrypts reports whether data is a file encrypted in format f (it holds f's marker; a binary
// file's is JSON's).
func Encrypts(data []byte, f Format) bool {
	if f == Binary {
		f = JSON
	}
	for _, m := range markers {
		if m.format == f {
			return bytes.Contains(data, m.marker)
		}
	}
	return false
}

// DecryptFile decrypts a file sops encrypted, read in format in and written in format out, as
// kustomize-controller decrypts a secretGenerator's sources and a Secret's encrypted values
// (through sops' stores): a binary file's data as it was, a dotenv file's lines, a YAML, JSON or
// INI file in its order, with its comments, byte for byte as sops writes it (see tree.go,
// ini.go). Its
// errors never hold a value.
// xref: kustomize-controller decryptor.go SopsDecryptWithFormat; getsops/sops v3 stores.
func DecryptFile(data []byte, in, out Format, ids Identities) (_ []byte, err error) {
	defer func() {
		// As kustomize-controller guards sops: malformed input must not take the run down.
		if r := recover(); r != nil {
			err = fmt.Errorf("encrypted %s file: cannot be read (%v)", in, r)
		}
	}()
	var bs []branch
	switch in {
	case YAML:
		var err error
		if bs, err = loadYAML(data); err != nil {
			return nil, fmt.Errorf("encrypted YAML file: %v", err)
		}
	case JSON, Binary:
		b, err := loadJSON(data)
		if err != nil {
			return nil, fmt.Errorf("encrypted %s file: %v", in, err)
		}
		bs = []branch{b}
	case Dotenv:
		b, err := readDotenv(data)
		if err != nil {
			return nil, err
		}
		bs = []branch{b}
	case INI:
		b, err := loadINI(data)
		if err != nil {
			return nil, fmt.Errorf("encrypted INI file: %v", err)
		}
		bs = []branch{b}
	default:
		return nil, fmt.Errorf("%s files are not decrypted (only YAML, JSON, INI, dotenv and binary ones)", in)
	}
	meta, err := extractMetadata(bs)
	if err != nil {
		return nil, err
	}
	key, err := dataKey(meta, ids)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		if _, err := decryptTree(b, nil, key); err != nil {
			return nil, err
		}
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("the decrypted %s file holds no document", in)
	}
	switch out {
	case Binary:
		for _, it := range bs[0] {
			if it.key == "data" {
				if s, ok := it.value.(string); ok {
					return []byte(s), nil
				}
			}
		}
		return nil, fmt.Errorf("written as binary, the decrypted %s file has no data key", in)
	case Dotenv:
		var b bytes.Buffer
		for _, it := range bs[0] {
			if c, ok := it.key.(comment); ok {
				fmt.Fprintf(&b, "#%s\n", c.value)
				continue
			}
			switch v := it.value.(type) {
			case branch, []any:
				return nil, fmt.Errorf("written as dotenv, the decrypted %s file's key %v is not a plain value", in, it.key)
			case string:
				fmt.Fprintf(&b, "%v=%s\n", it.key, strings.ReplaceAll(v, "\n", `\n`))
			default:
				fmt.Fprintf(&b, "%v=%v\n", it.key, v)
			}
		}
		return b.Bytes(), nil
	case JSON:
		return emitJSON(bs[0])
	case YAML:
		return emitYAML(bs)
	case INI:
		return emitINI(bs[0])
	}
	return nil, fmt.Errorf("decrypted files are not written as %s", out)
}

// readDotenv reads an encrypted dotenv file as sops' dotenv store does (each line a KEY=VALUE
// with its \n escapes read, or a comment; blank lines skipped), its sops metadata flattened into
// sops_ keys (sops_age__list_0__map_enc) gathered back into a sops entry.
func readDotenv(data []byte) (branch, error) {
	var b branch
	meta := map[string]any{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		if line[0] == '#' {
			b = append(b, item{key: comment{value: line[1:]}})
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("encrypted dotenv file: line %d is not KEY=VALUE", i+1)
		}
		v = strings.ReplaceAll(v, `\n`, "\n")
		if rest, isMeta := strings.CutPrefix(k, "sops_"); isMeta {
			if err := unflatten(meta, strings.Split(rest, "__"), v); err != nil {
				return nil, fmt.Errorf("encrypted dotenv file: line %d: sops metadata key %s: %v", i+1, k, err)
			}
			continue
		}
		b = append(b, item{key: k, value: v})
	}
	b = append(b, item{key: "sops", value: toBranch(meta)})
	return b, nil
}

// maxKeyEntries bounds the entries of one key type a flattened sops metadata holds.
const maxKeyEntries = 1000

// unflatten sets a flattened sops metadata value (age, list_0, map_enc) into meta.
func unflatten(meta map[string]any, path []string, v string) error {
	if len(path) == 1 {
		meta[path[0]] = v
		return nil
	}
	rest := path[1:]
	idx, err := strconv.Atoi(strings.TrimPrefix(rest[0], "list_"))
	if !strings.HasPrefix(rest[0], "list_") || err != nil || len(rest) != 2 || !strings.HasPrefix(rest[1], "map_") {
		return fmt.Errorf("not a list of entries")
	}
	// A file from a pull request is read: an index is bounded, so that it cannot ask for
	// memory it does not hold (sops writes one entry per key, a handful).
	if idx < 0 || idx >= maxKeyEntries {
		return fmt.Errorf("entry %d: at most %d entries are read", idx, maxKeyEntries)
	}
	l, _ := meta[path[0]].([]any)
	for len(l) <= idx {
		l = append(l, map[string]any{})
	}
	l[idx].(map[string]any)[strings.TrimPrefix(rest[1], "map_")] = v
	meta[path[0]] = l
	return nil
}

// toBranch is a map as a branch (for the sops entry, whose order does not matter).
func toBranch(m map[string]any) branch {
	var b branch
	for k, v := range m {
		if l, ok := v.([]any); ok {
			var out []any
			for _, e := range l {
				out = append(out, toBranch(e.(map[string]any)))
			}
			v = out
		}
		b = append(b, item{key: k, value: v})
	}
	return b
}
