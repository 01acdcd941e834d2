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
