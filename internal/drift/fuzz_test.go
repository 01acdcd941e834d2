package drift

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// FuzzCompareSelf: any object compared with itself has no divergence, and nothing panics on
// two different objects.
func FuzzCompareSelf(f *testing.F) {
	f.Add([]byte(deploy), []byte("spec: {replicas: 3}"))
	f.Add([]byte("spec:\n  ports: [{port: 80}, {port: 80, protocol: UDP}]\n"), []byte("spec: {ports: [1, {port: x}]}"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ma, mb map[string]any
		if sigsyaml.Unmarshal(a, &ma) != nil || sigsyaml.Unmarshal(b, &mb) != nil {
			return
		}
		for _, tm := range []yaml.TypeMeta{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "v1", Kind: "Service"}, {}} {
			if r := Compare(tm, ma, ma); len(r.Divergences) != 0 {
				t.Fatalf("%q against itself: %v", a, summary(r))
			}
			Compare(tm, ma, mb)
		}
	})
}
