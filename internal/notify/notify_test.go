package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/history"
)

// TestEvents: one DriftDetected when a divergence appears, none over ten runs of it, one
// DriftResolved when it is fixed; a field flipped back and forth five times tells at most two.
func TestEvents(t *testing.T) {
	var h history.History
	n := &Notifier{ConsoleURL: "https://drift.example.com/"}
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	m := "helmrelease/flux/api"
	seen := history.Seen{Key: history.Key{Measured: m, Object: "Deployment.apps apps/api", Path: "spec.replicas", Class: compare.Differs}, Managers: []string{"kubectl-scale"}}
	var told []string
	run := func(i int, drifting bool) {
		var s []history.Seen
		if drifting {
			s = []history.Seen{seen}
		}
		changes := h.Observe(t0.Add(time.Duration(i)*time.Minute), map[string]bool{m: true}, s)
		open := map[string]bool{}
		for k := range h.Oldest() {
			open[k] = true
		}
		for _, e := range n.Events(changes, open) {
			told = append(told, e.Reason+": "+e.Message)
		}
	}
	run(0, true)
	for i := 1; i <= 10; i++ {
		run(i, true)
	}
	if len(told) != 1 || !strings.HasPrefix(told[0], "DriftDetected: Drift detected in HelmRelease flux/api: 1 divergence(s) appeared: Deployment.apps apps/api spec.replicas (DIFFERS, moved by kubectl-scale). https://drift.example.com/helmrelease/flux/api") {
		t.Fatalf("after 11 runs of one drift: %q", told)
	}
	run(11, false)
	if len(told) != 2 || !strings.HasPrefix(told[1], "DriftResolved: ") {
		t.Fatalf("after the fix: %q", told)
	}
	told = nil
	for i := 0; i < 5; i++ {
		run(20+2*i, true)
		run(21+2*i, false)
	}
	if len(told) > 2 {
		t.Errorf("a field flipped five times told %d times, want at most 2: %q", len(told), told)
	}
}

// TestSinks: the Flux event as notification-controller's API reads it, the webhook's JSON and
// a Kubernetes Event on the HelmRelease.
func TestSinks(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(data))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	e := Event{Kind: "helmrelease", Namespace: "flux", Name: "api", Reason: DriftDetected, Message: "Drift detected in HelmRelease flux/api",
		Divergences: []history.Entry{{Key: history.Key{Object: "Deployment.apps apps/api", Path: "spec.replicas", Class: compare.Differs}}}}
	ctx := context.Background()
	if err := (&Flux{URL: srv.URL}).Send(ctx, e); err != nil {
		t.Fatal(err)
	}
	var ev eventv1.Event
	if err := json.Unmarshal([]byte(bodies[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.InvolvedObject.Kind != "HelmRelease" || ev.InvolvedObject.Name != "api" || ev.Severity != eventv1.EventSeverityError || ev.Reason != DriftDetected || ev.ReportingController != "helm-drift" {
		t.Errorf("Flux event %+v", ev)
	}
	if err := (&Flux{URL: srv.URL}).Send(ctx, Event{Kind: "release", Reason: DriftDetected}); err != nil || len(bodies) != 1 {
		t.Errorf("a Helm release's event went to Flux: %v, %d posts", err, len(bodies))
	}
	if err := (&Webhook{URL: srv.URL}).Send(ctx, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bodies[1], `"reason":"DriftDetected"`) || !strings.Contains(bodies[1], `"path":"spec.replicas"`) {
		t.Errorf("webhook body %s", bodies[1])
	}
	kc := fake.NewSimpleClientset()
	if err := (&Events{Client: kc}).Send(ctx, e); err != nil {
		t.Fatal(err)
	}
	list, _ := kc.EventsV1().Events("flux").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 || list.Items[0].Regarding.Kind != "HelmRelease" || list.Items[0].Reason != DriftDetected || list.Items[0].Type != "Warning" {
		t.Errorf("Kubernetes events %+v", list.Items)
	}
}
