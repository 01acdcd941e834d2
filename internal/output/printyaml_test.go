package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-openapi/jsonpointer"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestPrintYAMLAsSigs: printYAML prints every object of the test data, and of the corpus when
// it is beside the clone, byte for byte as sigs.k8s.io/yaml does, and finds every field at the
// line a YAML parser finds it.
func TestPrintYAMLAsSigs(t *testing.T) {
	repo := golden.RepoRoot()
	n := 0
	for _, root := range []string{filepath.Join(repo, "testdata"), filepath.Join(repo, "..", "shared", "corpus")} {
		_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || !strings.HasSuffix(p, ".yaml") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, doc := range strings.Split(string(data), "\n---") {
				var obj map[string]any
				if sigsyaml.Unmarshal([]byte(doc), &obj) != nil || obj == nil {
					continue
				}
				if !checkPrintYAML(t, p, obj) {
					return filepath.SkipAll
				}
				n++
			}
			return nil
		})
	}
	if n < 100 {
		t.Errorf("compared %d objects; want the test data's at least", n)
	}
}

// TestPrintYAMLScalars: the scalars printYAML leaves to yaml.v2 (quoted, literal, numbers,
// keys that read as other types, long keys), in mappings and sequences at every depth.
func TestPrintYAMLScalars(t *testing.T) {
	long := strings.Repeat("a long description of a field ", 8)
	values := []any{1.5, 3.0, 1e20, 1e21, 9223372036854775000.0, 18446744073709549568.0, -2.0, 0.000001,
		"", " lead", "trail ", "yes", "No", "ON", "null", "~", "0x1F", "1:20", "2001-12-14", "-", "- x", "-x", "a: b", "a:b",
		"a #b", "a#b", "#x", "@x", "`x", "'q'", "\"q\"", "tab\there", "line\nbreak", "line\nbreak\n", "\n", "  two\nlines",
		"ünïcode text", "<<", ".inf", ".5", "+1", long, long + ": x", "x" + strings.Repeat("y", 90) + " z", true, false, nil,
		map[string]any{}, []any{}, []any{[]any{"a", long}, []any{}, map[string]any{"k": long}}}
	keys := []string{"k", "on", "Yes", "1", "01", "1.5", "-", "a: b", "#", strings.Repeat("k", 130), "line\nkey", "ключ", ""}
	var items []any
	obj := map[string]any{}
	for i, v := range values {
		k := keys[i%len(keys)] + strconv.Itoa(i)
		if i < len(keys) {
			k = keys[i]
		}
		obj[k] = v
		items = append(items, v, map[string]any{k: v, "z": v})
	}
	nested := map[string]any{"top": obj, "list": items, "deep": map[string]any{"a": map[string]any{"b": []any{obj, items}}}}
	checkPrintYAML(t, "scalars", obj)
	checkPrintYAML(t, "nested", nested)
	checkPrintYAML(t, "empty", map[string]any{})
}

// FuzzPrintYAML: printYAML prints any object decoded from JSON as sigs.k8s.io/yaml does.
func FuzzPrintYAML(f *testing.F) {
	for _, s := range []string{`{"a":{"b":[1,"x",{"c":null}]}}`, `{"on":"yes","k":"a: b","l":[[1,[2]],{}]}`,
		`{"d":"` + strings.Repeat("word ", 40) + `"}`, `{"e":"a: b 'c' ` + strings.Repeat("word ", 30) + `x","f":"one\ntwo\n\nthree\n"}`, `{"m":"line\nbreak","n":1.5,"o":1e300}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) != nil || obj == nil {
			return
		}
		if _, err := sigsyaml.Marshal(obj); err != nil {
			return
		}
		checkPrintYAML(t, text, obj)
	})
}

// checkPrintYAML compares printYAML of obj, asked for every field, with sigs.k8s.io/yaml's
// text, and each field's line with the line a YAML parser gives it.
func checkPrintYAML(t *testing.T, name string, obj map[string]any) bool {
	t.Helper()
	want, err := sigsyaml.Marshal(obj)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var pointers []string
	allPointers(obj, "", &pointers)
	got, err := printYAML(obj, pointers)
	if err != nil || !bytes.Equal(got.text, want) {
		t.Errorf("%s: printYAML differs from sigs.k8s.io/yaml (%v):\n%s\nwant\n%s", name, err, got.text, want)
		return false
	}
	parsed := parsedLines(want)
	for _, ptr := range pointers {
		// Beneath a key printed as "? key" (a line break, more than 128 bytes), which no
		// Kubernetes object has, the lines are not known.
		if l, w := got.line(ptr), parsed(ptr); l != w && w >= 0 && !(l == -1 && underComplexKey(ptr)) {
			t.Errorf("%s: %s at line %d, want %d", name, ptr, l, w)
			return false
		}
	}
	return true
}

func underComplexKey(ptr string) bool {
	segs := strings.Split(ptr, "/")
	for _, seg := range segs[1 : len(segs)-1] {
		if seg = jsonpointer.Unescape(seg); len(seg) > 128 || strings.Contains(seg, "\n") {
			return true
		}
	}
	return false
}

func allPointers(v any, at string, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			p := at + "/" + jsonpointer.Escape(k)
			*out = append(*out, p)
			allPointers(e, p, out)
		}
	case []any:
		for i, e := range t {
			p := at + "/" + strconv.Itoa(i)
			*out = append(*out, p)
			allPointers(e, p, out)
		}
	}
}

// parsedLines is the line of each field of a YAML text as yaml.v3's parser gives it.
func parsedLines(text []byte) func(string) int {
	var root yaml.Node
	_ = yaml.Unmarshal(text, &root)
	return func(ptr string) int {
		n := &root
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			n = n.Content[0]
		}
		line := -1
		for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			seg = jsonpointer.Unescape(seg)
			switch n.Kind {
			case yaml.MappingNode:
				found := false
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == seg {
						line, n, found = n.Content[i].Line-1, n.Content[i+1], true
						break
					}
				}
				if !found {
					return -1
				}
			case yaml.SequenceNode:
				i, err := strconv.Atoi(seg)
				if err != nil || i >= len(n.Content) {
					return -1
				}
				n = n.Content[i]
				line = n.Line - 1
			default:
				return -1
			}
		}
		return line
	}
}
