package compare

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/helm-drift/helm-drift/internal/flux"
)

func TestIgnore(t *testing.T) {
	chart := obj(t, "metadata:\n  annotations:\n    a/b: x\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n        - name: side\n          image: s:1\n        - name: web\n          image: web:1\n")
	live := obj(t, "metadata:\n  annotations:\n    a/b: y\nspec:\n  replicas: 5\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:2\n        - name: side\n          image: s:2\n")
	deploy := Object{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web", Namespace: "apps", Labels: map[string]string{"tier": "front"}}
	tests := map[string]struct {
		rules []flux.IgnoreRule
		want  []string
	}{
		"none": {nil, []string{"/metadata/annotations/a~1b", "/spec/replicas", "/spec/template/spec/containers/1/image", "/spec/template/spec/containers/0/image"}},
		"replicas and escaped key": {
			[]flux.IgnoreRule{{Paths: []string{"/spec/replicas", "/metadata/annotations/a~1b"}}},
			[]string{"/spec/template/spec/containers/1/image", "/spec/template/spec/containers/0/image"}},
		"subtree by cluster index": {
			[]flux.IgnoreRule{{Paths: []string{"/spec/template/spec/containers/0"}}},
			[]string{"/metadata/annotations/a~1b", "/spec/replicas", "/spec/template/spec/containers/1/image"}},
		"target matches": {
			[]flux.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &flux.Target{Kind: "Deployment", LabelSelector: "tier=front"}}},
			[]string{"/metadata/annotations/a~1b", "/spec/template/spec/containers/1/image", "/spec/template/spec/containers/0/image"}},
		"target does not match": {
			[]flux.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &flux.Target{Kind: "StatefulSet"}}},
			[]string{"/metadata/annotations/a~1b", "/spec/replicas", "/spec/template/spec/containers/1/image", "/spec/template/spec/containers/0/image"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Compare(deployment, chart, live)
			Ignore(&r, tc.rules, deploy)
			var got []string
			for _, d := range r.Divergences {
				got = append(got, d.Pointer)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
