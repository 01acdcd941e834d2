package sops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A JSON file (and a binary file's JSON envelope) as sops' JSON store reads and writes it.
// xref: getsops/sops v3.13.2 stores/json/store.go.

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
