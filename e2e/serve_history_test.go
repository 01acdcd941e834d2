package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/reportstore"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// installReportCRD installs the OpenReports Report CRD as the chart renders it
// (serve.openreports.installCRD) and waits until the kind is served.
func installReportCRD(t *testing.T, h *helmCLI) {
	t.Helper()
	crd, _ := h.run(t, false, nil, "template", "x", "charts/helm-drift", "--set", "serve.openreports.installCRD=true", "-s", "templates/openreports-crd.yaml")
	applyYAML(t, strings.TrimPrefix(strings.TrimSpace(crd), "---\n"))
	testenv.Eventually(t, 30*time.Second, "the Report kind served", func() (bool, string) {
		_, err := cluster.Dynamic.Resource(reportstore.Reports).Namespace("default").List(context.Background(), metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// historyRow is a /report row: since, and the timeline.
type historyRow struct {
	Release, Namespace, HelmRelease string
	Since                           *time.Time
	Timeline                        []struct {
		Path       string
		FirstSeen  time.Time
		ResolvedAt time.Time
		Returns    int
		MovedBy    []string
	}
}

// reportRow is the first row of serve's /report that is reports true for (nil: none, or
// /report not served yet).
func reportRow(t *testing.T, p *serveProcess, is func(historyRow) bool) *historyRow {
	t.Helper()
	code, body := p.get("/report")
	if code != 200 {
		return nil
	}
	var doc struct{ Releases []historyRow }
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/report: %v", err)
	}
	for i, r := range doc.Releases {
		if is(r) {
			return &doc.Releases[i]
		}
	}
	return nil
}

// webRow is serve's /report row of Helm release ns/web.
func webRow(t *testing.T, p *serveProcess, ns string) *historyRow {
	t.Helper()
	return reportRow(t, p, func(r historyRow) bool { return r.Release == "web" && r.Namespace == ns && r.HelmRelease == "" })
}

// waitScaleRemembered waits until /report remembers release web's replicas drift in namespace
// ns, moved by kubectl-scale, and returns its since.
func waitScaleRemembered(t *testing.T, p *serveProcess, ns string) time.Time {
	t.Helper()
	var since time.Time
	testenv.Eventually(t, 40*time.Second, "the drift remembered in /report", func() (bool, string) {
		r := webRow(t, p, ns)
		if r == nil || r.Since == nil {
			return false, fmt.Sprintf("%+v", r)
		}
		for _, e := range r.Timeline {
			if e.Path == "spec.replicas" && strings.Join(e.MovedBy, ",") == "kubectl-scale" {
				since = *r.Since
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", r)
	})
	return since
}

// TestServeHistory: a drift made by another manager is remembered since its first run, with
// who moved it, in /report and in an OpenReports Report in the release's namespace; serve
// killed and restarted keeps the "since" to the second and logs nothing new; the fix is one
// "divergence resolved", the Report's result then pass; no Secret value in the Report.
func TestServeHistory(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	const marker = "HISTORY-SECRET-MARKER-5d1e"
	installReportCRD(t, h)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "headless=true", "--set", "password="+marker)
	// A webhook receiver: every notification's body.
	var hookMu sync.Mutex
	var hooks []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hooks = append(hooks, string(body))
		hookMu.Unlock()
	}))
	t.Cleanup(hook.Close)
	told := func(reason string) int {
		hookMu.Lock()
		defer hookMu.Unlock()
		n := 0
		for _, b := range hooks {
			if strings.Contains(b, `"reason":"`+reason+`"`) {
				n++
			}
		}
		return n
	}
	args := []string{"--auth=none", "--tls=false", "--namespaces", ns, "--notify-webhook", hook.URL, "--notify-events"}
	p := startServe(t, cluster.Kubeconfig, args...)
	testenv.Eventually(t, 40*time.Second, "serve's first run", func() (bool, string) {
		return strings.Contains(p.log(), `"msg":"run finished"`), p.log()
	})
	patch := func(replicas int, manager string) {
		t.Helper()
		if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	patch(5, "kubectl-scale")
	since := waitScaleRemembered(t, p, ns)
	rns, rname := reportstore.Name("release/" + ns + "/web")
	var report map[string]any
	testenv.Eventually(t, 40*time.Second, "the Report of release web", func() (bool, string) {
		u, err := cluster.Dynamic.Resource(reportstore.Reports).Namespace(rns).Get(context.Background(), rname, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		report = u.Object
		results, _ := u.Object["results"].([]any)
		for _, r := range results {
			rm, _ := r.(map[string]any)
			props, _ := rm["properties"].(map[string]any)
			if rm["rule"] == "Deployment.apps "+ns+"/web spec.replicas" && rm["result"] == "fail" && props["movedBy"] == "kubectl-scale" &&
				props["firstSeen"] == since.UTC().Format(time.RFC3339) {
				return true, ""
			}
		}
		return false, fmt.Sprint(results)
	})
	if data, _ := json.Marshal(report); strings.Contains(string(data), marker) {
		t.Errorf("the Report holds a Secret's value")
	}
	// One notification, then none over more runs; a Kubernetes Event on the namespace.
	testenv.Eventually(t, 20*time.Second, "one DriftDetected", func() (bool, string) { return told("DriftDetected") == 1, fmt.Sprint(hooks) })
	reportVersion := func() string {
		u, err := cluster.Dynamic.Resource(reportstore.Reports).Namespace(rns).Get(context.Background(), rname, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetResourceVersion()
	}
	runsAfter := func(n int) {
		t.Helper()
		now := strings.Count(p.log(), `"msg":"run finished"`)
		testenv.Eventually(t, 40*time.Second, fmt.Sprintf("%d more runs", n), func() (bool, string) {
			return strings.Count(p.log(), `"msg":"run finished"`) >= now+n, ""
		})
	}
	runsAfter(1) // the run that told has written its Report
	steady := reportVersion()
	runsAfter(3)
	if n := told("DriftDetected"); n != 1 {
		t.Errorf("%d DriftDetected after more runs of the same drift, want 1", n)
	}
	if v := reportVersion(); v != steady {
		t.Errorf("the Report was written again by steady runs (resourceVersion %s, was %s)", v, steady)
	}
	evs, err := cluster.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var detected int
	for _, e := range evs.Items {
		if e.Reason == "DriftDetected" && e.ReportingController == "helm-drift.io/serve" && e.Regarding.Kind == "Namespace" && strings.Contains(e.Note, "spec.replicas") {
			detected++
		}
	}
	if detected != 1 {
		t.Errorf("%d DriftDetected Kubernetes Events in %s, want 1", detected, ns)
	}

	// Killed and restarted: the same since, to the second, and no divergence logged as new.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p2 := startServe(t, cluster.Kubeconfig, args...)
	testenv.Eventually(t, 40*time.Second, "the restarted serve's first run", func() (bool, string) {
		return strings.Contains(p2.log(), `"msg":"run finished"`), p2.log()
	})
	if r := webRow(t, p2, ns); r == nil || r.Since == nil || !r.Since.Equal(since) {
		t.Errorf("after a restart, since %v, want %s", r, since)
	}
	if n := told("DriftDetected"); n != 1 {
		t.Errorf("%d DriftDetected after a restart, want still 1", n)
	}
	if !strings.Contains(p2.log(), "history read back from OpenReports Reports") || strings.Contains(p2.log(), `"msg":"divergence opened"`) {
		t.Errorf("the restarted serve did not read the history back, or logged an old divergence as new:\n%s", p2.log())
	}

	// The fix: one "divergence resolved", the Report's result pass.
	patch(2, "kubectl-scale")
	testenv.Eventually(t, 40*time.Second, "the drift resolved", func() (bool, string) {
		r := webRow(t, p2, ns)
		return r != nil && r.Since == nil, fmt.Sprintf("%+v", r)
	})
	if n := strings.Count(p2.log(), `"msg":"divergence resolved"`); n < 1 {
		t.Errorf("%d divergence resolved lines, want the replicas':\n%s", n, p2.log())
	}
	testenv.Eventually(t, 20*time.Second, "one DriftResolved", func() (bool, string) { return told("DriftResolved") == 1, fmt.Sprint(hooks) })
	hookMu.Lock()
	for _, b := range hooks {
		if strings.Contains(b, marker) {
			t.Errorf("a notification holds a Secret's value")
		}
	}
	hookMu.Unlock()
	testenv.Eventually(t, 40*time.Second, "the Report's result pass", func() (bool, string) {
		u, err := cluster.Dynamic.Resource(reportstore.Reports).Namespace(rns).Get(context.Background(), rname, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		summary, _ := u.Object["summary"].(map[string]any)
		return fmt.Sprint(summary["fail"]) == "0", fmt.Sprint(summary)
	})
}

// TestServeHistoryNoCRD: on a cluster that does not serve the OpenReports Report kind (a test
// environment of its own: the shared one has the CRD once any test installs it), serve runs,
// warns once that the history is kept in memory, and still remembers a drift's "since" and who
// moved it in /report, run after run.
func TestServeHistoryNoCRD(t *testing.T) {
	t.Parallel()
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatalf("a test environment of its own: %v", err)
	}
	t.Cleanup(func() { env.Stop() })
	if _, err := env.Dynamic.Resource(reportstore.Reports).Namespace("default").List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("a new test environment serves the Report kind: this test needs one that does not")
	}
	h := newHelm(t, "helm4")
	h.env = append(h.env, "KUBECONFIG="+env.Kubeconfig)
	const ns = "shop"
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--create-namespace", "--set", "headless=true")

	p := startServe(t, env.Kubeconfig, "--auth=none", "--tls=false", "--namespaces", ns)
	testenv.Eventually(t, 40*time.Second, "serve's first run", func() (bool, string) {
		return strings.Contains(p.log(), `"msg":"run finished"`), p.log()
	})
	if _, err := env.Kube.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`),
		metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	since := waitScaleRemembered(t, p, ns)
	// Three more runs: the same "since", and still the one warning.
	runs := strings.Count(p.log(), `"msg":"run finished"`)
	testenv.Eventually(t, 40*time.Second, "three more runs", func() (bool, string) {
		return strings.Count(p.log(), `"msg":"run finished"`) >= runs+3, p.log()
	})
	if r := webRow(t, p, ns); r == nil || r.Since == nil || !r.Since.Equal(since) {
		t.Errorf("after three more runs, release web's since is %+v, want %s", r, since)
	}
	log := p.log()
	if n := strings.Count(log, "the history is kept in memory only"); n != 1 {
		t.Errorf("serve warned %d times that the history is kept in memory, want once:\n%s", n, log)
	}
	if !strings.Contains(log, "openreports.installCRD") || !strings.Contains(log, `"level":"WARN"`) {
		t.Errorf("the warning does not say how to fix it (install the CRD, or --openreports=false):\n%s", log)
	}
	if strings.Contains(log, `"level":"ERROR"`) {
		t.Errorf("serve logged an error without the CRD:\n%s", log)
	}
}
