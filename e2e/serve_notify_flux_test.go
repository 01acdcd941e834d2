package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// hookReceiver is the generic-webhook receiver a Flux Provider points at: every event
// notification-controller forwarded to it.
type hookReceiver struct {
	url    string
	mu     sync.Mutex
	events []eventv1.Event
	bodies []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) == 0 {
			// Not a notification (a request with no body, seen once in CI): nothing to read.
			t.Logf("the Provider's address got a %s with no body", r.Method)
			return
		}
		var ev eventv1.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("the Provider posted something other than an event: %v\n%s", err, body)
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.bodies = append(h.bodies, string(body))
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// first is the first event of reason received (a zero one when none).
func (h *hookReceiver) first(reason string) eventv1.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Reason == reason {
			return e
		}
	}
	return eventv1.Event{}
}

// count is the number of events of reason received.
func (h *hookReceiver) count(reason string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func (h *hookReceiver) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.bodies, "\n")
}

// helmReleaseRow is serve's /report row of HelmRelease ns/web.
func helmReleaseRow(t *testing.T, p *serveProcess, ns string) *historyRow {
	t.Helper()
	return reportRow(t, p, func(r historyRow) bool { return r.HelmRelease == ns+"/web" })
}

// TestServeNotifyFlux: serve posts a HelmRelease's drift to the real notification-controller,
// whose Alert forwards it through a generic-webhook Provider to a receiver here. A replicas
// drift made by kubectl-scale is exactly one DriftDetected (severity error, naming the object,
// the field and the manager, the console's link carried as the Provider's metadata) within two
// intervals; ten more runs send nothing; serve killed and restarted keeps the "since" to the
// second and sends nothing; the field flipped back and forth five times is one divergence with
// five returns and one DriftResolved in all; no Secret value in any event.
func TestServeNotifyFlux(t *testing.T) {
	t.Parallel()
	if cluster.Events == "" {
		t.Fatal("the test environment has no notification-controller (TESTENV_EVENTS)")
	}
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	const marker = "NOTIFY-SECRET-MARKER-0b7a"
	installReportCRD(t, h)

	dir := t.TempDir()
	h.run(t, false, nil, "package", filepath.Join(repoRoot, "testdata/charts/webapp"), "-d", dir)
	repo := "oci://" + cluster.Registry + "/notify-" + ns
	h.run(t, false, nil, "push", filepath.Join(dir, "webapp-1.0.0.tgz"), repo, "--plain-http")
	// warn: helm-controller reports drift but does not correct it, so the drift stays as the
	// test makes it.
	applyWebHelmReleaseMode(t, ns, repo, marker, "warn")
	waitHistory(t, ns, 1)

	hook := newHookReceiver(t)
	applyYAML(t, fmt.Sprintf(`apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: hook, namespace: %[1]s}
spec: {type: generic, address: %[2]q}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: drift, namespace: %[1]s}
spec:
  providerRef: {name: hook}
  eventSeverity: info
  eventSources:
  - {kind: HelmRelease, name: web}`, ns, hook.url))

	const console = "https://drift.example.com"
	args := []string{"--auth=none", "--tls=false", "--namespaces", ns, "--notify-flux", cluster.Events, "--external-url", console}
	p := startServe(t, cluster.Kubeconfig, args...)
	runs := func(p *serveProcess) int { return strings.Count(p.log(), `"msg":"run finished"`) }
	runsAfter := func(p *serveProcess, n int) {
		t.Helper()
		now := runs(p)
		testenv.Eventually(t, time.Duration(n+2)*10*time.Second, fmt.Sprintf("%d more runs", n), func() (bool, string) {
			return runs(p) >= now+n, p.log()
		})
	}
	testenv.Eventually(t, 40*time.Second, "serve's first run, the HelmRelease in step", func() (bool, string) {
		r := helmReleaseRow(t, p, ns)
		_, report := p.get("/report")
		return runs(p) > 0 && r != nil && r.Since == nil, fmt.Sprintf("%+v\n%s", r, report)
	})
	scale := func(replicas int) {
		t.Helper()
		if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas), metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
			t.Fatal(err)
		}
	}

	// The drift: one DriftDetected within two intervals (and the run in between).
	scale(5)
	testenv.Eventually(t, 12*time.Second, "one DriftDetected forwarded by notification-controller, within two intervals", func() (bool, string) {
		return hook.count("DriftDetected") == 1, hook.String() + "\n" + p.log()
	})
	ev := hook.first("DriftDetected")
	if ev.InvolvedObject.Kind != "HelmRelease" || ev.InvolvedObject.Namespace != ns || ev.InvolvedObject.Name != "web" ||
		ev.Severity != eventv1.EventSeverityError || ev.ReportingController != "helm-drift" {
		t.Errorf("the DriftDetected event: %+v", ev)
	}
	for _, want := range []string{"Deployment.apps " + ns + "/web", "spec.replicas", "moved by kubectl-scale"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("the DriftDetected message does not name %q: %s", want, ev.Message)
		}
	}
	if link := console + "/helmrelease/" + ns + "/web"; ev.Metadata["console"] != link {
		t.Errorf("the event's metadata %v, want console %s", ev.Metadata, link)
	}
	// The event is sent during the run that found the drift, /report updated at its end.
	var since *time.Time
	testenv.Eventually(t, 12*time.Second, "/report shows since when the drift is", func() (bool, string) {
		r := helmReleaseRow(t, p, ns)
		if r == nil || r.Since == nil {
			return false, fmt.Sprintf("row %+v", r)
		}
		since = r.Since
		return true, ""
	})

	// Ten more runs of the same drift: nothing more.
	runsAfter(p, 10)
	if n := hook.count("DriftDetected") + hook.count("DriftResolved"); n != 1 {
		t.Errorf("%d events after ten more runs of the same drift, want still 1:\n%s", n, hook)
	}

	// Killed and restarted: the same since, to the second, nothing sent.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p = startServe(t, cluster.Kubeconfig, args...)
	runsAfter(p, 2)
	if r := helmReleaseRow(t, p, ns); r == nil || r.Since == nil || since == nil || !r.Since.Equal(*since) {
		t.Errorf("after a restart, row %+v, want since %v", r, since)
	}
	if n := hook.count("DriftDetected") + hook.count("DriftResolved"); n != 1 {
		t.Errorf("%d events after a restart, want still 1:\n%s", n, hook)
	}

	// Flipped back and forth five times, then fixed: one divergence that came back five times,
	// one DriftResolved in all.
	for i := 0; i < 5; i++ {
		scale(3)
		runsAfter(p, 1)
		scale(5)
		runsAfter(p, 1)
	}
	scale(3)
	testenv.Eventually(t, 20*time.Second, "the drift resolved", func() (bool, string) {
		r := helmReleaseRow(t, p, ns)
		return r != nil && r.Since == nil && hook.count("DriftResolved") == 1, fmt.Sprintf("%+v\n%s", r, hook)
	})
	runsAfter(p, 1)
	r := helmReleaseRow(t, p, ns)
	var entries int
	for _, e := range r.Timeline {
		if e.Path == "spec.replicas" {
			entries++
			if e.Returns != 5 || e.ResolvedAt.IsZero() {
				t.Errorf("spec.replicas' history %+v, want 5 returns and resolved", e)
			}
		}
	}
	if entries != 1 {
		t.Errorf("%d histories of spec.replicas, want one: %+v", entries, r.Timeline)
	}
	if d, res := hook.count("DriftDetected"), hook.count("DriftResolved"); d != 1 || res != 1 {
		t.Errorf("%d DriftDetected and %d DriftResolved over a drift flipped five times, want 1 and 1:\n%s", d, res, hook)
	}
	hook.mu.Lock()
	resolved := hook.events[len(hook.events)-1]
	hook.mu.Unlock()
	if resolved.Reason != "DriftResolved" || resolved.Severity != eventv1.EventSeverityInfo {
		t.Errorf("the last event %+v, want DriftResolved (info)", resolved)
	}
	if strings.Contains(hook.String(), marker) {
		t.Errorf("an event holds a Secret's value")
	}
	// notification-controller's own log: both dispatched, none failed.
	logs, _ := os.ReadFile(filepath.Join(cluster.Dir, "logs", "notification-controller.log"))
	if strings.Contains(string(logs), "failed to dispatch notification for HelmRelease/"+ns+"/web") {
		t.Errorf("notification-controller failed to dispatch:\n%s", logs)
	}
}
