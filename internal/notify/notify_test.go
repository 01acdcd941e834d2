package notify

import (
	"context"
	"encoding/json"
	"fmt"
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
		Link: "https://drift.example.com/helmrelease/flux/api", Divergences: []history.Entry{{Key: history.Key{Object: "Deployment.apps apps/api", Path: "spec.replicas", Class: compare.Differs}}}}
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
	// notification-controller keeps only the metadata prefixed with the object's group.
	if ev.Metadata["helm.toolkit.fluxcd.io/console"] != e.Link {
		t.Errorf("Flux event metadata %v, want the console link under helm.toolkit.fluxcd.io/", ev.Metadata)
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

// TestAlertmanager: a drift told fires one alert (labels alertname, kind, namespace, name; ends
// Lasts later unless re-sent), re-sent after each run while it lasts, ended at once when it is
// gone; the first run's drift (alerted, never sent) is not re-sent; a restart's open drift (told
// before it) is.
func TestAlertmanager(t *testing.T) {
	var mu sync.Mutex
	var posts [][]amAlert
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v2/alerts" {
			t.Errorf("%s %s, want POST /api/v2/alerts", r.Method, r.URL.Path)
		}
		var alerts []amAlert
		if err := json.NewDecoder(r.Body).Decode(&alerts); err != nil {
			t.Error(err)
		}
		mu.Lock()
		posts = append(posts, alerts)
		mu.Unlock()
	}))
	defer srv.Close()
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := t0
	am := &Alertmanager{URL: srv.URL + "/", Lasts: 30 * time.Minute, Now: func() time.Time { return now }}
	n := &Notifier{Sinks: []Sink{am}}
	ctx := context.Background()
	m := "release/apps/api"
	entry := history.Entry{Key: history.Key{Measured: m, Object: "Deployment.apps apps/api", Path: "spec.replicas", Class: compare.Differs}, FirstSeen: t0}
	open := map[string][]history.Entry{m: {entry}}

	// The first run: alerted, not sent, so not re-sent.
	n.Events([]history.Change{{Entry: entry, What: history.Opened}}, map[string]bool{m: true})
	if err := n.Resend(ctx, open); err != nil || len(posts) != 0 {
		t.Fatalf("the first run's drift was re-sent: %v, %d posts", err, len(posts))
	}

	// Another release's drift, told: fires.
	m2 := "release/apps/web"
	e2 := entry
	e2.Measured, e2.Object = m2, "Deployment.apps apps/web"
	events := n.Events([]history.Change{{Entry: e2, What: history.Opened}}, map[string]bool{m: true, m2: true})
	if err := n.Send(ctx, events); err != nil {
		t.Fatal(err)
	}
	if len(posts) != 1 || len(posts[0]) != 1 {
		t.Fatalf("posts %+v, want one alert", posts)
	}
	got := posts[0][0]
	want := map[string]string{"alertname": "HelmDriftDetected", "kind": "release", "namespace": "apps", "name": "web", "severity": "warning"}
	if fmt.Sprint(got.Labels) != fmt.Sprint(want) || !got.StartsAt.Equal(t0) || !got.EndsAt.Equal(t0.Add(30*time.Minute)) ||
		!strings.Contains(got.Annotations["summary"], "Deployment.apps apps/web spec.replicas") {
		t.Errorf("the firing alert %+v", got)
	}

	// Re-sent after a run, the told one only, ending later.
	now = t0.Add(10 * time.Minute)
	open[m2] = []history.Entry{e2}
	if err := n.Resend(ctx, open); err != nil {
		t.Fatal(err)
	}
	if len(posts) != 2 || len(posts[1]) != 1 || posts[1][0].Labels["name"] != "web" || !posts[1][0].EndsAt.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("re-sent %+v, want web's alert, ending 30m from now", posts[1:])
	}

	// Gone: ended now, same labels.
	now = t0.Add(20 * time.Minute)
	e2.ResolvedAt = now
	events = n.Events([]history.Change{{Entry: e2, What: history.Resolved}}, map[string]bool{m: true})
	if err := n.Send(ctx, events); err != nil {
		t.Fatal(err)
	}
	if len(posts) != 3 || fmt.Sprint(posts[2][0].Labels) != fmt.Sprint(want) || !posts[2][0].EndsAt.Equal(now) {
		t.Fatalf("the resolved alert %+v, want the same labels, ending now", posts[2:])
	}
	delete(open, m2)
	if err := n.Resend(ctx, open); err != nil || len(posts) != 3 {
		t.Fatalf("a resolved drift was re-sent: %v, %d posts", err, len(posts))
	}

	// After a restart, the open drift told before it fires again.
	n2 := &Notifier{Sinks: []Sink{am}}
	n2.Alerted([]string{m})
	if err := n2.Resend(ctx, open); err != nil || len(posts) != 4 || posts[3][0].Labels["name"] != "api" {
		t.Fatalf("after a restart: %v, posts %+v", err, posts[3:])
	}

	// Alertmanager refusing is an error naming it.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad alert", http.StatusBadRequest) }))
	defer bad.Close()
	n3 := &Notifier{Sinks: []Sink{&Alertmanager{URL: bad.URL}}}
	n3.Alerted([]string{m})
	if err := n3.Resend(ctx, open); err == nil || !strings.Contains(err.Error(), "alertmanager") || !strings.Contains(err.Error(), "bad alert") {
		t.Errorf("a refusal: %v", err)
	}
}
