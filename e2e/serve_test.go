package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// servedMetrics scrapes url and parses it with Prometheus's own text-format parser.
func servedMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v", err)
	}
	return mf
}

// sample returns the value of family's series whose labels include want, and whether there is one.
func sample(mf map[string]*dto.MetricFamily, family string, want map[string]string) (float64, bool) {
	f := mf[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

// serveProcess is helm drift serve running as a process; its stderr is kept.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client // verifies the served certificate (TestServeSecure)
	mu     sync.Mutex
	logs   strings.Builder
	done   chan error
}

func (p *serveProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func startServe(t *testing.T, kubeconfig string, extra ...string) *serveProcess {
	t.Helper()
	// Tests run in parallel on one cluster: a serve that measured every namespace would write
	// the OpenReports Reports of other tests' releases (its own first sightings over theirs).
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--namespaces") }) {
		t.Fatal("startServe: confine serve to the test's namespaces with --namespaces")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	scheme := "https://"
	if slices.Contains(extra, "--tls=false") {
		scheme = "http://"
	}
	p := &serveProcess{url: scheme + addr, done: make(chan error, 1), client: http.DefaultClient}
	p.cmd = exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), append([]string{"serve", "--interval", "5s", "--listen", addr, "--kubeconfig", kubeconfig, "--grace", "3s"}, extra...)...)
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
	})
	return p
}

// get returns the status and body of a GET of path.
func (p *serveProcess) get(path string) (int, string) {
	res, err := p.client.Get(p.url + path)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// installWebBoth installs the webapp chart (its password marker) as release web in ns with
// Helm, and as HelmRelease web in ns-hr by helm-controller from the test registry, as in
// TestDiffHelmRelease; it returns ns-hr.
func installWebBoth(t *testing.T, h *helmCLI, ns, marker string) string {
	t.Helper()
	ctx := context.Background()
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "headless=true", "--set", "password="+marker)
	dir := t.TempDir()
	h.run(t, false, nil, "package", filepath.Join(repoRoot, "testdata/charts/webapp"), "-d", dir)
	repo := "oci://" + cluster.Registry + "/web-" + ns
	h.run(t, false, nil, "push", filepath.Join(dir, "webapp-1.0.0.tgz"), repo, "--plain-http")
	hrNS := ns + "-hr"
	if _, err := cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hrNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), hrNS, metav1.DeleteOptions{}) })
	applyWebHelmRelease(t, hrNS, repo, marker)
	waitHistory(t, hrNS, 1)
	return hrNS
}

// editWebBoth changes what installWebBoth installed, out of band: the Deployment's replicas
// by another manager (kubectl-scale), the ConfigMap deleted, the Secret's password changed,
// the HelmRelease's values edited.
func editWebBoth(t *testing.T, ns, hrNS, marker string) {
	t.Helper()
	ctx, kc := context.Background(), cluster.Kube
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(kc.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"}))
	must(nil, kc.CoreV1().ConfigMaps(ns).Delete(ctx, "web-settings", metav1.DeleteOptions{}))
	must(kc.CoreV1().Secrets(ns).Patch(ctx, "web-creds", types.MergePatchType, []byte(`{"stringData":{"password":"`+marker+`-2"}}`), metav1.PatchOptions{}))
	applyYAML(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: webapp-values, namespace: %s}\ndata:\n  values.yaml: \"replicas: 4\\n\"", hrNS))
}

// TestServe: helm drift serve, run as the ServiceAccount of charts/helm-drift installed by the
// real Helm (its get/list-only RBAC; a token from the TokenRequest API), measures releases and
// HelmReleases every interval; its /metrics parse
// with Prometheus's parser and follow the cluster (a clean install at 0, a field another
// manager changed as DIFFERS, a deleted object as CHART-ONLY, a HelmRelease's values edit as
// next_reconcile upgrade); the API server out of reach makes failed runs (counted, readyz says
// why, the release series dropped, the last success's time kept) and back in reach a success;
// no Secret value in /metrics, /report or the logs; SIGTERM in the middle of a run ends it
// within the grace period.
func TestServe(t *testing.T) {
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	const marker = "SERVE-SECRET-MARKER-91c3"
	hrNS := installWebBoth(t, h, ns, marker)

	// The reader: the chart's own ServiceAccount and RBAC (get and list, nothing else), a token
	// for it from the TokenRequest API.
	kc := cluster.Kube
	h.run(t, false, nil, "install", "drift", "charts/helm-drift", "-n", ns)
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "drift", "-n", ns) })
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "drift-helm-drift", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The API server is reached through a proxy that can be taken away (connections closed as a
	// stopped server's would be) and slowed down.
	var down, slow atomic.Bool
	front := testenv.APIFront(t, cluster.Config, false, func(w http.ResponseWriter, r *http.Request, forward func() int) {
		if down.Load() {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if slow.Load() {
			time.Sleep(2 * time.Second)
		}
		forward()
	})

	p := startServe(t, tokenKubeconfig(t, front.URL, tok.Status.Token), "--auth=none", "--tls=false", "--namespaces="+ns+","+hrNS)
	release := map[string]string{"namespace": ns, "release": "web", "kind": "release"}
	hr := map[string]string{"namespace": hrNS, "release": "web", "kind": "helmrelease"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// waitFor scrapes until cond holds for the metrics of a run after the one seen now.
	runs := func(mf map[string]*dto.MetricFamily, result string) float64 {
		v, _ := sample(mf, "helm_drift_runs_total", map[string]string{"result": result})
		return v
	}
	waitFor := func(what string, cond func(mf map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			mf := servedMetrics(t, p.url)
			if cond(mf) {
				return mf
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen in 40s\nlogs:\n%s", what, p.log())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	testenv.Eventually(t, 30*time.Second, "/readyz", func() (bool, string) {
		code, body := p.get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})

	// A clean install: every divergence gauge of the release and the HelmRelease at 0.
	mf := servedMetrics(t, p.url)
	for _, labels := range []map[string]string{release, hr} {
		for _, class := range []string{"DIFFERS", "CHART-ONLY", "CLUSTER-ONLY", "SHADOWS"} {
			if v, ok := sample(mf, "helm_drift_divergences", with(labels, "class", class)); !ok || v != 0 {
				t.Errorf("fresh install: divergences %v %s = %v (present %v), want 0\nlogs:\n%s", labels, class, v, ok, p.log())
			}
		}
		if v, _ := sample(mf, "helm_drift_compared_fields", labels); v == 0 {
			t.Errorf("fresh install: %v compared no field", labels)
		}
	}
	if v, ok := sample(mf, "helm_drift_next_reconcile", with(hr, "action", "drift correction")); !ok || v != 1 {
		t.Errorf("fresh HelmRelease: next_reconcile drift correction = %v (present %v)", v, ok)
	}

	editWebBoth(t, ns, hrNS, marker)
	mf = waitFor("the edits", func(mf map[string]*dto.MetricFamily) bool {
		d, _ := sample(mf, "helm_drift_divergences", with(release, "class", "DIFFERS"))
		c, _ := sample(mf, "helm_drift_divergences", with(release, "class", "CHART-ONLY"))
		u, _ := sample(mf, "helm_drift_next_reconcile", with(hr, "action", "upgrade"))
		return d >= 2 && c >= 1 && u == 1
	})
	success := runs(mf, "success")
	lastSuccess, _ := sample(mf, "helm_drift_last_success_timestamp_seconds", nil)

	// Remembered: since when the release drifts, who moved the replicas and when, in /report,
	// the metrics and one log line per divergence that appeared.
	_, report := p.get("/report")
	var summary struct {
		Releases []struct {
			Release, Namespace, HelmRelease string
			Since                           *time.Time
			Timeline                        []struct {
				Object, Path string
				FirstSeen    time.Time
				MovedBy      []string
				MovedAt      time.Time
			}
		}
	}
	if err := json.Unmarshal([]byte(report), &summary); err != nil {
		t.Fatalf("/report: %v", err)
	}
	var remembered bool
	for _, r := range summary.Releases {
		if r.Release != "web" || r.Namespace != ns || r.HelmRelease != "" {
			continue
		}
		for _, e := range r.Timeline {
			if e.Path == "spec.replicas" && strings.Join(e.MovedBy, ",") == "kubectl-scale" && !e.MovedAt.IsZero() && r.Since != nil && !e.FirstSeen.Before(*r.Since) {
				remembered = true
				if v, _ := sample(mf, "helm_drift_oldest_divergence_timestamp_seconds", release); v != float64(r.Since.Unix()) {
					t.Errorf("oldest divergence metric %v, want /report's since %s", v, r.Since)
				}
			}
		}
	}
	if !remembered {
		t.Errorf("/report does not remember the replicas moved by kubectl-scale:\n%s", report)
	}
	if v, _ := sample(mf, "helm_drift_divergence_changes_total", map[string]string{"change": "opened"}); v < 1 {
		t.Errorf("divergences opened: %v, want the edits counted", v)
	}
	if !strings.Contains(p.log(), `"msg":"divergence opened"`) || !strings.Contains(p.log(), `"moved_by":"kubectl-scale"`) {
		t.Errorf("no log line for the divergence kubectl-scale opened:\n%s", p.log())
	}

	// No Secret value anywhere it serves or logs.
	if !strings.Contains(report, `"releases"`) || !strings.Contains(report, `"checkedAt"`) {
		t.Errorf("/report is not the summary:\n%s", report)
	}
	res, _ := http.Get(p.url + "/metrics")
	metricsText, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for where, text := range map[string]string{"/metrics": string(metricsText), "/report": report, "the logs": p.log()} {
		for _, leak := range []string{marker, base64.StdEncoding.EncodeToString([]byte(marker))} {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds a Secret's value", where)
			}
		}
	}

	// The API server out of reach: failed runs, the success time kept, the series dropped.
	down.Store(true)
	mf = waitFor("a failed run", func(mf map[string]*dto.MetricFamily) bool { return runs(mf, "failed") >= 1 })
	if v, _ := sample(mf, "helm_drift_last_success_timestamp_seconds", nil); v != lastSuccess {
		t.Errorf("after a failed run the last success moved: %v, was %v", v, lastSuccess)
	}
	if _, ok := sample(mf, "helm_drift_divergences", with(release, "class", "DIFFERS")); ok {
		t.Errorf("after a failed run the release's figures are still exported as fresh")
	}
	if code, body := p.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "failed") {
		t.Errorf("/readyz after a failed run: %d %s", code, body)
	}
	if !strings.Contains(p.log(), `"msg":"run failed"`) {
		t.Errorf("no structured line for the failed run:\n%s", p.log())
	}
	// Back in reach: the next run succeeds.
	down.Store(false)
	waitFor("a success after the failure", func(mf map[string]*dto.MetricFamily) bool { return runs(mf, "success") > success })
	if code, _ := p.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the server came back: %d", code)
	}

	// SIGTERM in the middle of a run (the API server slowed down to make one last): it ends
	// within the grace period, the run cancelled.
	slow.Store(true)
	testenv.Eventually(t, 30*time.Second, "a run in progress", func() (bool, string) {
		l := p.log()
		return strings.Count(l, `"msg":"run finished"`)+strings.Count(l, `"msg":"run failed"`) < strings.Count(l, "run started"), ""
	})
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not end within 10s of SIGTERM\n%s", p.log())
	}
	if took := time.Since(start); !strings.Contains(p.log(), "run interrupted by shutdown") {
		t.Errorf("SIGTERM during a run (ended after %v): the run was not interrupted:\n%s", took, p.log())
	}
}
