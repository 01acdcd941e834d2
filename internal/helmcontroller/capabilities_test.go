package helmcontroller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestBuiltinKinds: the built-in kinds are offered as discovery lists them ("group/version/
// Kind"), lists and request options left out.
func TestBuiltinKinds(t *testing.T) {
	kinds := builtinKinds()
	for _, want := range []string{"policy/v1/PodDisruptionBudget", "apps/v1/Deployment", "v1/ConfigMap", "networking.k8s.io/v1/Ingress", "batch/v1/CronJob"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("builtin kinds lack %s", want)
		}
	}
	for _, kind := range kinds {
		if strings.HasSuffix(kind, "List") || strings.HasSuffix(kind, "Options") || strings.HasSuffix(kind, "/WatchEvent") {
			t.Errorf("builtin kinds hold %s", kind)
		}
	}
}

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
	asks := UnservedAsks(ch, nil)
	if !slices.Contains(asks, "monitoring.coreos.com/v1") || slices.Contains(asks, "policy/v1/PodDisruptionBudget") {
		t.Errorf("traefik's unserved asks %v: want monitoring.coreos.com/v1, not policy/v1/PodDisruptionBudget", asks)
	}
	if asks := UnservedAsks(ch, []string{"monitoring.coreos.com/v1"}); slices.Contains(asks, "monitoring.coreos.com/v1") {
		t.Errorf("given monitoring.coreos.com/v1, still asked: %v", asks)
	}
}
