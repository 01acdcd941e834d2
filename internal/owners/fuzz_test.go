package owners

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// FuzzStream: the stream checks never panic, whatever the stream holds, and a HelmRelease's
// release read without parsing is the one its parsed spec names.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	f.Add([]byte("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: a\nspec:\n  \"release\\x4eame\": b\n"))
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
		c := NewChecker(objs, Options{Namespace: "ns"})
		c.Stream(objs)
		for _, o := range objs {
			if o.Kind != flux.HelmReleaseKind || o.Node != nil {
				continue
			}
			ns := c.Identity(o).Namespace
			got, err := targetOf(o, ns)
			if err != nil {
				continue
			}
			n, err := o.Parsed()
			if err != nil {
				continue // the parser refuses what the scanner read no further than it needed
			}
			if want := ReleaseOf(n, ns); got != want {
				t.Errorf("%s: release %+v without parsing, %+v parsed", o.Where(), got, want)
			}
		}
	})
}
