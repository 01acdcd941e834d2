package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestMarshalYAMLAsSigs: marshalYAML prints every object of the test data, and of the corpus
// when it is beside the clone, byte for byte as sigs.k8s.io/yaml does.
func TestMarshalYAMLAsSigs(t *testing.T) {
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
				want, err := sigsyaml.Marshal(obj)
				if err != nil {
					continue
				}
				got, err := marshalYAML(obj)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: marshalYAML differs from sigs.k8s.io/yaml:\n%s\nwant\n%s", p, got, want)
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
	for _, v := range []any{1.5, 3.0, 1e20, 1e21, 9223372036854775000.0, 18446744073709549568.0, -2.0, 0.000001} {
		obj := map[string]any{"v": v}
		want, _ := sigsyaml.Marshal(obj)
		if got, _ := marshalYAML(obj); !bytes.Equal(got, want) {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}
