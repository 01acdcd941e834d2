package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// addSeeds seeds a fuzz target with every input.yaml under testdata.
func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("---\n--- #c\nkind: x\n...\n---\r\n\ufeffa: [1, *b]\n"))
}

// FuzzRoundTrip: a stream nobody changes comes back byte-for-byte, whatever it holds; and
// parsing and re-encoding any document never panics.
func FuzzRoundTrip(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Split(in)
		if err != nil {
			return
		}
		out, err := s.Bytes()
		if err != nil {
			t.Fatalf("Bytes of an untouched stream: %v", err)
		}
		if !bytes.Equal(in, out) {
			t.Fatalf("untouched stream changed:\n%q\n%q", in, out)
		}
		for _, d := range s.Docs {
			root, err := d.Node()
			if err != nil || root == nil || root.YNode().Kind != yaml.MappingNode {
				continue
			}
			SetField(root.YNode(), "fuzzed", &yaml.Node{Kind: yaml.ScalarNode, Value: "yes"})
			d.MarkChanged()
		}
		if _, err := s.Bytes(); err != nil {
			return // a duplicate key, say: an error, never a panic
		}
	})
}
