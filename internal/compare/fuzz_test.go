package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/helm-drift/helm-drift/internal/normalize"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// FuzzCompareSelf: any object compared with itself has no divergence, raw or normalised, and
// nothing panics on two different objects, in the normaliser, the inert marker, or the dry-run clean-up
// and allocation fill (b as the live object). Seeded with every document of the
// testdata streams.
func FuzzCompareSelf(f *testing.F) {
	f.Add([]byte(deploy), []byte("spec: {replicas: 3}"))
	f.Add([]byte("spec:\n  ports: [{port: 80}, {port: 80, protocol: UDP}]\n"), []byte("spec: {ports: [1, {port: x}]}"))
	f.Add([]byte("kind: Secret\nstringData: {a: b}\ndata: {a: Yw==}\n"), []byte("properties: {spec: {properties: {size: {default: 3}}}}"))
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			f.Add(doc, []byte("spec: {replicas: 3}"))
		}
	}
	// Load kyaml's OpenAPI data before fuzzing, in every worker: its first use takes seconds,
	// which would stall the first input each worker runs past a short -fuzztime.
	rootSchema(yaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ma, mb map[string]any
		if sigsyaml.Unmarshal(a, &ma) != nil || sigsyaml.Unmarshal(b, &mb) != nil {
			return
		}
		for _, tm := range []yaml.TypeMeta{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "v1", Kind: "Service"}, {APIVersion: "v1", Kind: "Secret"}, {}} {
			if r := Compare(tm, ma, ma); len(r.Divergences) != 0 {
				t.Fatalf("%q against itself: %v", a, summary(r))
			}
			n := normalize.Object(ma, "ns")
			if r := Compare(tm, n, normalize.Object(ma, "ns")); len(r.Divergences) != 0 {
				t.Fatalf("%q normalised, against itself: %v", a, summary(r))
			}
			r := Compare(tm, ma, mb)
			MarkInert(&r, ma, mb)
			normalize.Unallocate(tm.Kind, ma, mb, "x")
			normalize.Allocated(tm.Kind, ma, mb)
		}
	})
}
