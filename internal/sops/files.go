package sops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
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
// kustomize-controller decrypts a secretGenerator's sources and a Secret's encrypted values: a
// binary file's data as it was, a dotenv file's KEY=VALUE lines, YAML or JSON (written with
// sorted keys: sops keeps the file's order, which only a generated name's hash can tell). Its
// errors never hold a value.
// xref: kustomize-controller decryptor.go SopsDecryptWithFormat; getsops/sops v3 stores.
func DecryptFile(data []byte, in, out Format, ids Identities) ([]byte, error) {
	var tree map[string]any
	var order []string // a dotenv file's keys, in its order
	switch in {
	case YAML:
		if err := sigsyaml.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("encrypted YAML file: %v", err)
		}
	case JSON, Binary:
		if err := json.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("encrypted %s file: %v", in, err)
		}
	case Dotenv:
		var err error
		if tree, order, err = readDotenv(data); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s files are not decrypted (only YAML, JSON, dotenv and binary ones)", in)
	}
	plain, err := Decrypt(tree, ids)
	if err != nil {
		return nil, err
	}
	switch out {
	case Binary:
		s, ok := plain["data"].(string)
		if !ok {
			return nil, fmt.Errorf("written as binary, the decrypted %s file has no data key", in)
		}
		return []byte(s), nil
	case Dotenv:
		if order == nil {
			for k := range plain {
				order = append(order, k)
			}
			sort.Strings(order)
		}
		var b bytes.Buffer
		for _, k := range order {
			v, ok := plain[k]
			if !ok {
				continue
			}
			if _, nested := v.(map[string]any); nested {
				return nil, fmt.Errorf("written as dotenv, the decrypted %s file's key %s is not a plain value", in, k)
			}
			fmt.Fprintf(&b, "%s=%v\n", k, v)
		}
		return b.Bytes(), nil
	case JSON:
		return json.MarshalIndent(plain, "", "\t")
	case YAML:
		return sigsyaml.Marshal(plain)
	}
	return nil, fmt.Errorf("decrypted files are not written as %s", out)
}

// readDotenv reads an encrypted dotenv file: its KEY=VALUE lines (comments and blank lines
// skipped) and its sops metadata, flattened into sops_ keys (sops_age__list_0__map_enc, with
// its newlines escaped), gathered back into the tree's sops entry.
func readDotenv(data []byte) (map[string]any, []string, error) {
	tree := map[string]any{}
	var order []string
	ages := map[int]map[string]any{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, nil, fmt.Errorf("encrypted dotenv file: line %d is not KEY=VALUE", i+1)
		}
		if rest, meta := strings.CutPrefix(k, "sops_age__list_"); meta {
			n, field, _ := strings.Cut(rest, "__map_")
			idx, err := strconv.Atoi(n)
			if err != nil {
				return nil, nil, fmt.Errorf("encrypted dotenv file: line %d: sops metadata key %s", i+1, k)
			}
			if ages[idx] == nil {
				ages[idx] = map[string]any{}
			}
			ages[idx][field] = strings.ReplaceAll(v, `\n`, "\n")
			continue
		}
		if strings.HasPrefix(k, "sops_") {
			continue
		}
		tree[k] = v
		order = append(order, k)
	}
	var list []any
	for i := 0; i < len(ages); i++ {
		list = append(list, ages[i])
	}
	tree["sops"] = map[string]any{"age": list}
	return tree, order, nil
}
