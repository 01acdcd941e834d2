package manifest

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzScan: wherever the line scanner claims certainty, the YAML parser reads the same
// identity; nothing panics.
func FuzzScan(f *testing.F) {
	addSeeds(f)
	// Load kyaml's OpenAPI data before fuzzing, in every worker: its first use takes seconds,
	// which would stall the first input each worker runs past a short -fuzztime.
	openapi.IsNamespaceScoped(yaml.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Split(in)
		if err != nil {
			return
		}
		for _, d := range s.Docs {
			got, ok := scan(d, &strs{})
			if !ok || got.Kind == "" {
				continue
			}
			want, parsedOK := parsed(t, d)
			if !parsedOK {
				continue
			}
			if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Name != want.Name || got.Namespace != want.Namespace || got.Hook != want.Hook {
				t.Fatalf("scanner %+v, parser %+v for %q", got, want, d.Body)
			}
		}
		objs, err := Objects(s)
		if err != nil {
			return
		}
		id := NewIdentifier(objs, "ns", nil)
		for _, o := range objs {
			id.Identity(o)
		}
	})
}
