package owners

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// TestTargetOf holds the release a HelmRelease writes, read without parsing where its text
// cannot change it, to the release ReleaseOf reads from the parsed spec.
func TestTargetOf(t *testing.T) {
	const head = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\nspec:\n  interval: 10m\n"
	tests := []struct {
		name   string
		spec   string
		want   Target
		parsed bool // the spec had to be parsed
	}{
		{"own name and namespace", "", Target{Namespace: "apps", Release: "web", Storage: "apps"}, false},
		{"releaseName", "  releaseName: shop\n", Target{Namespace: "apps", Release: "shop", Storage: "apps"}, true},
		{"targetNamespace", "  targetNamespace: prod\n", Target{Namespace: "apps", Release: "prod-web", Storage: "apps"}, true},
		{"storageNamespace", "  storageNamespace: flux-system\n", Target{Namespace: "apps", Release: "web", Storage: "flux-system"}, true},
		{"an escape in a quoted key spells releaseName", "  \"release\\u004eame\": shop\n", Target{Namespace: "apps", Release: "shop", Storage: "apps"}, true},
		{"the field name in a value only", "  values:\n    note: releaseName is not set\n", Target{Namespace: "apps", Release: "web", Storage: "apps"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := manifest.Split([]byte(head + tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := manifest.Objects(s)
			if err != nil || len(objs) != 1 {
				t.Fatalf("Objects: %v, %d objects", err, len(objs))
			}
			if objs[0].Node != nil {
				t.Fatal("the line scanner did not read the HelmRelease; the fast path is not exercised")
			}
			got, err := targetOf(objs[0], "apps")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("targetOf = %+v, want %+v", got, tt.want)
			}
			if s.Docs[0].Parsed() != tt.parsed {
				t.Errorf("document parsed = %v, want %v", s.Docs[0].Parsed(), tt.parsed)
			}
		})
	}
}

// TestTargetOfTransformed: a HelmRelease whose document a transform changed is read from its
// changed tree, not from its text.
func TestTargetOfTransformed(t *testing.T) {
	s, err := manifest.Split([]byte("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\nspec:\n  interval: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := s.Docs[0].Node()
	if err != nil {
		t.Fatal(err)
	}
	spec := manifest.Lookup(root.YNode(), "spec")
	spec.Content = append(spec.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "releaseName"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "shop"})
	s.Docs[0].MarkChanged()
	objs, err := manifest.Objects(s)
	if err != nil || len(objs) != 1 {
		t.Fatalf("Objects: %v, %d objects", err, len(objs))
	}
	got, err := targetOf(objs[0], "apps")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Target{Namespace: "apps", Release: "shop", Storage: "apps"}); got != want {
		t.Errorf("targetOf = %+v, want %+v", got, want)
	}
}
