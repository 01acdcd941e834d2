package sops

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// An INI file as sops' INI store reads and writes it, through the same library (gopkg.in/ini.v1):
// each section a branch of its keys, a section's comment first, a key's comment after it; the
// sops metadata a [sops] section of flattened keys (age__list_0__map_enc), its newlines escaped.
// xref: getsops/sops v3.13.2 stores/ini/store.go; stores/stores.go ValToString.

// loadINI reads an encrypted INI file into a branch of sections, its sops section gathered
// back into a sops entry.
func loadINI(data []byte) (branch, error) {
	f, err := ini.LoadSources(ini.LoadOptions{AllowNonUniqueSections: true}, data)
	if err != nil {
		return nil, err
	}
	var b branch
	meta := map[string]any{}
	for _, sec := range f.Sections() {
		if sec.Name() == "sops" {
			for _, k := range sec.Keys() {
				if err := unflatten(meta, strings.Split(k.Name(), "__"), strings.ReplaceAll(k.Value(), `\n`, "\n")); err != nil {
					return nil, fmt.Errorf("sops metadata key %s: %v", k.Name(), err)
				}
			}
			continue
		}
		var items branch
		if sec.Comment != "" {
			items = append(items, item{key: comment{value: iniComment(sec.Comment)}})
		}
		for _, k := range sec.Keys() {
			items = append(items, item{key: k.Name(), value: k.Value()})
			if k.Comment != "" {
				items = append(items, item{key: comment{value: iniComment(k.Comment)}})
			}
		}
		b = append(b, item{key: sec.Name(), value: items})
	}
	if len(meta) > 0 {
		b = append(b, item{key: "sops", value: toBranch(meta)})
	}
	return b, nil
}

// iniComment is a comment without its leading ; or # and the spaces after it (sops
// stripCommentChar).
func iniComment(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

// emitINI writes a branch of sections as sops' INI store EmitPlainFile.
func emitINI(b branch) ([]byte, error) {
	f := ini.Empty(ini.LoadOptions{AllowNonUniqueSections: true})
	f.DeleteSection(ini.DefaultSection)
	for _, it := range b {
		name, ok := it.key.(string)
		if !ok {
			continue // a comment
		}
		sec, err := f.NewSection(name)
		if err != nil {
			return nil, fmt.Errorf("section %s: %v", name, err)
		}
		items, ok := it.value.(branch)
		if !ok {
			return nil, errors.New("a section's value is not a mapping of keys")
		}
		if len(items) > 0 {
			if c, ok := items[0].key.(comment); ok {
				sec.Comment = c.value
				items = items[1:]
			}
		}
		var last *ini.Key
		for _, kv := range items {
			if c, ok := kv.key.(comment); ok {
				if last != nil {
					last.Comment = c.value
				}
				continue
			}
			k, _ := kv.key.(string)
			if last, err = sec.NewKey(k, valueString(kv.value)); err != nil {
				return nil, fmt.Errorf("section %s: key %s: %v", name, k, err)
			}
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// valueString is a value as sops writes it in an INI file (stores.ValToString).
func valueString(v any) string {
	switch v := v.(type) {
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsRune(s, '.') && !strings.ContainsRune(s, 'E') {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}
