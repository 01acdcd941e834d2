package reportstore

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/history"
)

// TestSyncLoad: a Report per measurement, written only when its history changed, read back
// as the same history; one too large keeps MaxResults results and counts the rest.
func TestSyncLoad(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Reports: "ReportList"})
	s := &Store{Client: client}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var h history.History
	web := history.Seen{Key: history.Key{Measured: "release/shop/web", Object: "Deployment.apps shop/web", Path: "spec.replicas", Class: compare.Differs},
		Managers: []string{"kubectl-scale"}, MovedAt: t0}
	api := history.Seen{Key: history.Key{Measured: "helmrelease/flux/api", Object: "ConfigMap apps/api", Path: "data.mode", Class: compare.ClusterOnly}}
	measured := []string{"release/shop/web", "helmrelease/flux/api"}
	h.Observe(t0, map[string]bool{measured[0]: true, measured[1]: true}, []history.Seen{web, api})
	if n, err := s.Sync(ctx, measured, h.Entries); err != nil || n != 2 {
		t.Fatalf("first sync: %d written, %v; want 2", n, err)
	}
	h.Observe(t0.Add(time.Minute), map[string]bool{measured[0]: true, measured[1]: true}, []history.Seen{web, api})
	if n, err := s.Sync(ctx, measured, h.Entries); err != nil || n != 0 {
		t.Fatalf("a steady run: %d written, %v; want none", n, err)
	}
	h.Observe(t0.Add(2*time.Minute), map[string]bool{measured[0]: true, measured[1]: true}, []history.Seen{web})
	if n, err := s.Sync(ctx, measured, h.Entries); err != nil || n != 1 {
		t.Fatalf("api's divergence resolved: %d written, %v; want its Report alone", n, err)
	}
	got, err := (&Store{Client: client}).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := h.Entries("")
	byKey := func(es []history.Entry) map[history.Key]history.Entry {
		m := map[history.Key]history.Entry{}
		for _, e := range es {
			if e.Open() {
				e.LastSeen = e.FirstSeen // not kept while open
			}
			m[e.Key] = e
		}
		return m
	}
	if !reflect.DeepEqual(byKey(got), byKey(want)) {
		t.Errorf("read back:\n%+v\nwant:\n%+v", got, want)
	}
	r, err := client.Resource(Reports).Namespace("flux").Get(ctx, "helm-drift-helmrelease-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scope, _ := r.Object["scope"].(map[string]any); scope["kind"] != "HelmRelease" || scope["name"] != "api" {
		t.Errorf("scope %v, want the HelmRelease", r.Object["scope"])
	}

	var big []history.Entry
	for i := 0; i < MaxResults+100; i++ {
		big = append(big, history.Entry{Key: history.Key{Measured: "release/shop/big", Object: fmt.Sprintf("ConfigMap shop/c%04d", i), Path: "data.x", Class: compare.Differs},
			FirstSeen: t0, LastSeen: t0})
	}
	if _, err := s.Sync(ctx, []string{"release/shop/big"}, func(string) []history.Entry { return big }); err != nil {
		t.Fatal(err)
	}
	r, _ = client.Resource(Reports).Namespace("shop").Get(ctx, "helm-drift-release-big", metav1.GetOptions{})
	results, _ := r.Object["results"].([]any)
	if len(results) != MaxResults || r.GetAnnotations()[omittedAnnot] != "100" {
		t.Errorf("%d results, omitted %q; want %d and 100", len(results), r.GetAnnotations()[omittedAnnot], MaxResults)
	}
}
