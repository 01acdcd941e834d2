package history

import (
	"strings"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
)

// TestObserve follows one divergence through runs: opened once, seen again without a change,
// resolved, back (a return, its first-seen time kept), flipping five times (one divergence,
// five returns), and left alone by a run that did not measure its release.
func TestObserve(t *testing.T) {
	var h History
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	web := Seen{Key: Key{Measured: "release/shop/web", Object: "Deployment.apps shop/web", Path: "spec.replicas", Class: compare.Differs},
		Managers: []string{"kubectl-scale"}, MovedAt: t0.Add(-time.Minute)}
	measured := map[string]bool{"release/shop/web": true}
	run := func(i int, seen ...Seen) string {
		var parts []string
		for _, c := range h.Observe(t0.Add(time.Duration(i)*time.Minute), measured, seen) {
			parts = append(parts, c.What+" "+c.Path)
		}
		return strings.Join(parts, ", ")
	}
	if got := run(0, web); got != "opened spec.replicas" {
		t.Fatalf("run 0: %q", got)
	}
	for i := 1; i <= 10; i++ {
		if got := run(i, web); got != "" {
			t.Fatalf("run %d, the same divergence: %q, want no change", i, got)
		}
	}
	if got := run(11); got != "resolved spec.replicas" {
		t.Fatalf("run 11: %q", got)
	}
	if got := h.Observe(t0.Add(12*time.Minute), map[string]bool{}, nil); len(got) != 0 {
		t.Fatalf("a run that did not measure the release: %v", got)
	}
	for i := 0; i < 5; i++ {
		if got := run(13+2*i, web); got != "returned spec.replicas" {
			t.Fatalf("flip %d: %q", i, got)
		}
		if got := run(14 + 2*i); got != "resolved spec.replicas" {
			t.Fatalf("flop %d: %q", i, got)
		}
	}
	run(30, web)
	es := h.Entries("release/shop/web")
	if len(es) != 1 || !es[0].Open() || es[0].Returns != 6 || !es[0].FirstSeen.Equal(t0) || !es[0].MovedAt.Equal(t0.Add(-time.Minute)) || es[0].Managers[0] != "kubectl-scale" {
		t.Errorf("entry %+v, want one open divergence first seen at %s with 6 returns, moved by kubectl-scale", es, t0)
	}
	if o := h.Oldest()["release/shop/web"]; !o.Equal(t0) {
		t.Errorf("oldest %s, want %s", o, t0)
	}
	var restored History
	restored.Restore(h.Entries(""))
	if got := restored.Observe(t0.Add(31*time.Minute), measured, []Seen{web}); len(got) != 0 {
		t.Errorf("after a restore, the same divergence: %v, want no change", got)
	}
}
