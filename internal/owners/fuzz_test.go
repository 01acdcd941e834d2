package owners

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// FuzzStream: the stream checks never panic, whatever the stream holds.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	// Load kyaml's OpenAPI data before fuzzing (its first use takes seconds).
	openapi.IsNamespaceScoped(yaml.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := manifest.Split(in)
		if err != nil {
			return
		}
		objs, err := manifest.Objects(s)
		if err != nil {
			return
		}
		NewChecker(objs, Options{Namespace: "ns"}).Stream(objs)
	})
}
