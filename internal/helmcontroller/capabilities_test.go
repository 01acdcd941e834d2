package helmcontroller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestBuildOfflineKinds: with no cluster, a chart that asks .Capabilities.APIVersions for a
// built-in kind gets the cluster's answer: the corpus's traefik renders its
// PodDisruptionBudget as policy/v1, as helm-controller does on a cluster that serves it, not
// policy/v1beta1 (which helm template renders, and no cluster since Kubernetes 1.25 serves).
func TestBuildOfflineKinds(t *testing.T) {
	corpus, _, ok := testenv.Corpus(t)
	if !ok {
		t.Skip("../shared/corpus is absent (a user's clone): the corpus's traefik is not rendered")
	}
	if _, err := os.Stat(filepath.Join(corpus, "traefik")); err != nil {
		t.Skip("no traefik in the corpus")
	}
	ch, err := loader4.Load(filepath.Join(corpus, "traefik"))
	if err != nil {
		t.Fatal(err)
	}
	hr, err := Decode(map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "traefik", "namespace": "traefik"},
		"spec": map[string]any{"interval": "1h", "chart": map[string]any{"spec": map[string]any{"chart": "traefik", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "traefik"}}},
			"values": map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), hr, BuildOptions{Get: &StreamFirst{NoCluster: "no cluster"}, Chart: ch, KubeVersion: "v1.34.2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.Manifest, "apiVersion: policy/v1\nkind: PodDisruptionBudget") {
		i := strings.Index(b.Manifest, "kind: PodDisruptionBudget")
		t.Errorf("traefik's PodDisruptionBudget, offline, is not policy/v1: %q", b.Manifest[max(0, i-60):max(0, i)+30])
	}
}

// TestUnservedAsks: of what the corpus's traefik asks .Capabilities.APIVersions for, the
// Prometheus Operator's API is not offered with no cluster unless given; Kubernetes' own
// PodDisruptionBudget is.
func TestUnservedAsks(t *testing.T) {
	corpus, _, ok := testenv.Corpus(t)
	if !ok {
		t.Skip("../shared/corpus is absent (a user's clone): the corpus's traefik is not read")
	}
	ch, err := loader4.Load(filepath.Join(corpus, "traefik"))
	if err != nil {
		t.Fatal(err)
	}
	asks := UnservedAsks(ch, "v1.34.2", nil)
	if !slices.Contains(asks, "monitoring.coreos.com/v1") || slices.Contains(asks, "policy/v1/PodDisruptionBudget") {
		t.Errorf("traefik's unserved asks %v: want monitoring.coreos.com/v1, not policy/v1/PodDisruptionBudget", asks)
	}
	if asks := UnservedAsks(ch, "v1.34.2", []string{"monitoring.coreos.com/v1"}); slices.Contains(asks, "monitoring.coreos.com/v1") {
		t.Errorf("given monitoring.coreos.com/v1, still asked: %v", asks)
	}
}

// TestBuildOfflineServed: with no cluster, a chart that asks for a built-in API version gets
// the answer of an API server of --kube-version's release, not helm template's fixed set:
// policy/v1beta1 at 1.24, not at 1.34 (removed in 1.25); nothing is noted as unserved for it.
func TestBuildOfflineServed(t *testing.T) {
	ch := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "asks", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: asks}
data:
  policy: {{ if .Capabilities.APIVersions.Has "policy/v1beta1" }}v1beta1{{ else }}v1{{ end }}
  cronjob: {{ if .Capabilities.APIVersions.Has "batch/v1beta1/CronJob" }}v1beta1{{ else }}v1{{ end }}
  hpa: {{ if .Capabilities.APIVersions.Has "autoscaling/v2" }}v2{{ else }}v1{{ end }}
`)}}}
	hr, err := Decode(map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "asks", "namespace": "apps"},
		"spec":     map[string]any{"interval": "1h", "chart": map[string]any{"spec": map[string]any{"chart": "asks", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "r"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kube, want string }{
		{"v1.34.2", "cronjob: v1\n  hpa: v2\n  policy: v1\n"},
		{"v1.24.0", "cronjob: v1beta1\n  hpa: v2\n  policy: v1beta1\n"},
	} {
		b, err := Build(context.Background(), hr, BuildOptions{Get: &StreamFirst{NoCluster: "no cluster"}, Chart: ch, KubeVersion: tc.kube})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.Manifest, tc.want) {
			t.Errorf("%s: rendered\n%s\nwant %q", tc.kube, b.Manifest, tc.want)
		}
		if asks := UnservedAsks(ch, tc.kube, nil); len(asks) > 0 {
			t.Errorf("%s: built-in versions noted as unserved: %v", tc.kube, asks)
		}
	}
}

// TestBuildOfflineChartCRDs: with no cluster, a chart sees the API versions of the CRDs its
// crds/ holds when helm-controller applies them before rendering (its crds policy for the
// install or upgrade is not Skip; a dependency its values disable leaves its own out), and an
// upgrade sees those of the upgraded release's chart, which the cluster holds.
func TestBuildOfflineChartCRDs(t *testing.T) {
	crd := func(group, kind string) *common.File {
		return &common.File{Name: "crds/" + group + ".yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.` + group + `}
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, plural: things}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}, {name: v0, served: false, storage: false}]
`)}
	}
	chart := func() *chartv2.Chart {
		sub := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "sub", Version: "0.1.0"}, Files: []*common.File{crd("c.example.com", "Thing")}}
		ch := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "app", Version: "0.1.0",
			Dependencies: []*chartv2.Dependency{{Name: "sub", Version: "0.1.0", Condition: "sub.enabled"}}},
			Values: map[string]any{"sub": map[string]any{"enabled": false}},
			Files:  []*common.File{crd("a.example.com", "Widget")},
			Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data:
  a: {{ .Capabilities.APIVersions.Has "a.example.com/v1/Widget" | quote }}
  a0: {{ .Capabilities.APIVersions.Has "a.example.com/v0" | quote }}
  b: {{ .Capabilities.APIVersions.Has "b.example.com/v1" | quote }}
  c: {{ .Capabilities.APIVersions.Has "c.example.com/v1/Thing" | quote }}
`)}}}
		ch.AddDependency(sub)
		return ch
	}
	base := &Rendered{Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "app", Version: "0.0.1"}, Files: []*common.File{crd("b.example.com", "Gadget")}}}
	for _, tc := range []struct {
		name     string
		spec     map[string]any
		upgrades *Rendered
		want     string
	}{
		{"install", map[string]any{}, nil, `a: "true"\n  a0: "false"\n  b: "false"\n  c: "false"`},
		{"install, crds Skip", map[string]any{"install": map[string]any{"crds": "Skip"}}, nil, `a: "false"\n  a0: "false"\n  b: "false"\n  c: "false"`},
		{"install, the dependency enabled", map[string]any{"values": map[string]any{"sub": map[string]any{"enabled": true}}}, nil, `a: "true"\n  a0: "false"\n  b: "false"\n  c: "true"`},
		{"upgrade", map[string]any{}, base, `a: "true"\n  a0: "false"\n  b: "true"\n  c: "false"`},
		{"upgrade, crds Skip", map[string]any{"upgrade": map[string]any{"crds": "Skip"}, "install": map[string]any{"crds": "Create"}}, base, `a: "false"\n  a0: "false"\n  b: "true"\n  c: "false"`},
	} {
		spec := map[string]any{"interval": "1h", "chart": map[string]any{"spec": map[string]any{"chart": "app", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "r"}}}}
		for k, v := range tc.spec {
			spec[k] = v
		}
		hr, err := Decode(map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": map[string]any{"name": "app", "namespace": "apps"}, "spec": spec})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(context.Background(), hr, BuildOptions{Get: &StreamFirst{NoCluster: "no cluster"}, Chart: chart(), KubeVersion: "v1.34.2", Upgrades: tc.upgrades})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := strings.ReplaceAll(tc.want, `\n`, "\n"); !strings.Contains(b.Manifest, want) {
			t.Errorf("%s: rendered\n%s\nwant %s", tc.name, b.Manifest, want)
		}
		if asks := UnservedAsks(b.Chart, "v1.34.2", b.Offered); strings.Contains(tc.want, `a: "true"`) && slices.Contains(asks, "a.example.com/v1/Widget") {
			t.Errorf("%s: the chart's own CRD noted as unserved: %v", tc.name, asks)
		}
	}
}
