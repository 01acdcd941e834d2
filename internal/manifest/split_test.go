package manifest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestRoundTripUntouched: whatever the stream holds, a stream nobody changes comes back
// byte-for-byte, and splits into the documents a reader would count.
func TestRoundTripUntouched(t *testing.T) {
	tests := map[string]struct {
		in   string
		docs int
	}{
		"empty":                 {"", 1},
		"only separator":        {"---\n", 1},
		"comment-only document": {"---\n# Source: c/templates/empty.yaml\n---\napiVersion: v1\nkind: ConfigMap\n", 2},
		"empty documents":       {"---\n---\n---\napiVersion: v1\n", 3},
		"separator comment":     {"--- # first\napiVersion: v1\n--- #second\nkind: x\n", 2},
		"separator tab":         {"---\t\napiVersion: v1\n", 1},
		"leading doc":           {"a: 1\n---\nb: 2\n", 2},
		"no final newline":      {"---\na: 1\n---\nb: 2", 2},
		"block scalar dashes":   {"---\ndata:\n  script: |\n    echo a\n    ---\n    --- x\n    echo b\n---\nb: 2\n", 2},
		"bom":                   {"\ufeff---\napiVersion: v1\n---\nb: 2\n", 2},
		"crlf":                  {"---\r\napiVersion: v1\r\nkind: ConfigMap\r\n---\r\nb: 2\r\n", 2},
		"trailing spaces":       {"---   \na: 1   \n\n\n", 1},
		"document end marker":   {"---\na: 1\n...\n---\nb: 2\n", 2},
		"quoting and order":     {"---\nz: 'single'\na: \"double\"\nm: >-\n  folded\n", 1},
		"anchors":               {"---\na: &x {k: v}\nb: *x\n", 1},
		"kind List":             {"---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n", 1},
		"not a mapping":         {"---\n- a\n- b\n---\njust a string\n", 2},
		"invalid yaml passes":   {"---\na: [1, 2\n", 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Split([]byte(tc.in))
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			if len(s.Docs) != tc.docs {
				t.Errorf("got %d documents, want %d", len(s.Docs), tc.docs)
			}
			out, err := s.Bytes()
			if err != nil {
				t.Fatalf("Bytes: %v", err)
			}
			if diff := cmp.Diff(tc.in, string(out)); diff != "" {
				t.Errorf("round trip changed the stream (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	tests := map[string]struct {
		in   string
		want string
	}{
		"glued separator": {"---\na: 1\n---apiVersion: v1\nkind: x\n", `line 3: "---apiVersion: v1": a document separator must be followed by a space`},
		"nul byte":        {"---\na: 1\n---\nb: \x00\n", "document 2 (line 3): line 4: control character 0x00"},
		"binary garbage":  {"---\na: 1\n\xff\xfe\x00\x01garbage\n", "document 1 (line 1): line 3: invalid UTF-8"},
		"escape char":     {"a: \x1b[31m\n", "control character 0x1b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Split([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// edit sets metadata.labels.edited on every document whose text contains marker.
func edit(t *testing.T, in, marker string) (string, error) {
	t.Helper()
	s, err := Split([]byte(in))
	if err != nil {
		return "", err
	}
	for _, d := range s.Docs {
		if !d.Contains([]byte(marker)) {
			continue
		}
		n, err := d.Node()
		if err != nil {
			return "", err
		}
		if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "labels"), yaml.SetField("edited", yaml.NewStringRNode("yes"))); err != nil {
			return "", err
		}
		d.MarkChanged()
	}
	out, err := s.Bytes()
	return string(out), err
}

func TestEditOnlyChangedDocuments(t *testing.T) {
	tests := map[string]struct {
		in, want string
	}{
		"one of three": {
			in:   "---\n# Source: c/templates/a.yaml\napiVersion: v1   \nkind: A\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: EDIT\nmetadata:\n  name: 'b'\n  annotations:\n    note: \"kept\" # why\n--- # c\nkind:    C\n",
			want: "---\n# Source: c/templates/a.yaml\napiVersion: v1   \nkind: A\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: EDIT\nmetadata:\n  name: 'b'\n  annotations:\n    note: \"kept\" # why\n  labels:\n    edited: \"yes\"\n--- # c\nkind:    C\n",
		},
		"crlf kept": {
			in:   "---\r\nkind: EDIT\r\nmetadata:\r\n  name: x\r\n---\r\nkind: B\r\n",
			want: "---\r\nkind: EDIT\r\nmetadata:\r\n  name: x\r\n  labels:\r\n    edited: \"yes\"\r\n---\r\nkind: B\r\n",
		},
		"bom kept": {
			in:   "\ufeffkind: EDIT\n---\nkind: B\n",
			want: "\ufeffkind: EDIT\nmetadata:\n  labels:\n    edited: \"yes\"\n---\nkind: B\n",
		},
		"wide sequences kept": {
			in:   "kind: EDIT\nlist:\n  - a\n  - b\n",
			want: "kind: EDIT\nlist:\n  - a\n  - b\nmetadata:\n  labels:\n    edited: \"yes\"\n",
		},
		"aliases not expanded": {
			in:   "kind: EDIT\nbase: &b\n  k: v\nuse: *b\n",
			want: "kind: EDIT\nbase: &b\n  k: v\nuse: *b\nmetadata:\n  labels:\n    edited: \"yes\"\n",
		},
		"kind List": {
			in:   "apiVersion: v1\nkind: List\nitems:\n- kind: EDIT\n",
			want: "apiVersion: v1\nkind: List\nitems:\n- kind: EDIT\nmetadata:\n  labels:\n    edited: \"yes\"\n",
		},
		"separator with content": {
			in:   "--- {kind: EDIT}\n---\nkind: B\n",
			want: "---\n{kind: EDIT, metadata: {labels: {edited: \"yes\"}}}\n---\nkind: B\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := edit(t, tc.in, "EDIT")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEditErrors(t *testing.T) {
	tests := map[string]struct {
		in, want string
	}{
		"duplicate keys":  {"---\nkind: x\n---\nkind: EDIT\nspec:\n  a: 1\n  a: 2\n", `document 2 (line 3): mapping key "a" at spec is defined twice (lines 6 and 7)`},
		"invalid yaml":    {"---\nkind: x\n---\n# Source: c/t.yaml\nkind: EDIT\nspec: [1, 2\n", "document 2 (source: c/t.yaml): invalid YAML"},
		"two in one":      {"kind: EDIT\n...\nkind: other\n", "holds more than one YAML document"},
		"tab indentation": {"kind: EDIT\nspec:\n\ta: 1\n", "invalid YAML: line 3: found character that cannot start any token"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := edit(t, tc.in, "EDIT")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSource(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"helm comment":      {"# Source: chart/templates/a.yaml\nkind: A\n", "chart/templates/a.yaml"},
		"helm 4":            {"kind: A\nmetadata:\n  annotations:\n    postrenderer.helm.sh/postrender-filename: 'chart/templates/b.yaml'\n", "chart/templates/b.yaml"},
		"none":              {"kind: A\n", ""},
		"not line start":    {"kind: A # Source: x\n", ""},
		"both, comment won": {"# Source: c/a.yaml\nmetadata:\n  annotations:\n    postrenderer.helm.sh/postrender-filename: c/b.yaml\n", "c/a.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := (&Document{Body: []byte(tc.in)}).Source(); got != tc.want {
				t.Errorf("Source() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBillionLaughs: a document of nested aliases that would expand to 10^9 nodes is parsed,
// edited and written back without expanding anything. The bound is on memory, not on time:
// an expansion would need gigabytes.
func TestBillionLaughs(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: EDIT\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	in := b.String()
	got, err := edit(t, in, "EDIT")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 2*len(in) {
		t.Fatalf("output grew from %d to %d bytes: aliases were expanded", len(in), len(got))
	}
	if !strings.Contains(got, "a9: &a9 [*a8, *a8") {
		t.Errorf("aliases not kept:\n%s", got)
	}
}

func TestLargeValueAndWideMap(t *testing.T) {
	big := strings.Repeat("x", 5<<20)
	t.Run("5 MB single-line value", func(t *testing.T) {
		in := "kind: EDIT\ndata:\n  big: " + big + "\n---\nkind: B\nbig: " + big + "\n"
		got, err := edit(t, in, "EDIT")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(got, "---\nkind: B\nbig: "+big+"\n") || !strings.Contains(got, "big: "+big+"\nmetadata:") {
			t.Errorf("large value not kept (output %d bytes)", len(got))
		}
	})
	t.Run("50,000 keys", func(t *testing.T) {
		var b bytes.Buffer
		b.WriteString("kind: EDIT\ndata:\n")
		for i := 0; i < 50000; i++ {
			fmt.Fprintf(&b, "  key%d: v\n", i)
		}
		in := b.String()
		start := time.Now()
		got, err := edit(t, in, "EDIT")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, in) {
			t.Errorf("keys not kept in order")
		}
		t.Logf("50,000 keys edited in %v", time.Since(start)) // reported, not asserted
	})
}
