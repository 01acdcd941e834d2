package diffbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/reportstore"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// beforeHistory is the last commit before serve kept a history (issue 49): its serve is the
// memory baseline, "today's serve" as the issue measures against.
const beforeHistory = "7ee9983"

// TestServeHistoryCompare measures serve's history at scale: 1,000 webapp releases in 10
// namespaces, one in ten drifted (its replicas moved by kubectl-scale). serve with its history
// in OpenReports Reports runs five times, is restarted and runs three times more; an API front
// counts its writes per run (the target: a Report per release on the first run, none on a
// steady run, none after the restart). Its peak RSS is compared with the serve of before the
// history (built from beforeHistory) over the same fleet, same number of runs (target: at most
// 1.2x).
func TestServeHistoryCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	root := testenv.RepoRoot()
	env, bin := startBench(t)
	baseline := buildAt(t, root, beforeHistory)
	const namespaces, releases = 10, 1000
	ctx := context.Background()
	for n := range namespaces {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace(n)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := loader.Load(filepath.Join(root, "testdata/charts/webapp"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := action.NewConfiguration(action.KubeOptions{Kubeconfig: env.Kubeconfig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One release in ten drifted: its replicas moved by kubectl-scale.
	installFleet(t, conf, ch, 0, releases, namespaces, nil, func(i int, ns, name string) error {
		if i%10 != 0 {
			return nil
		}
		_, err := env.Kube.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"})
		return err
	})

	// The Report CRD as the chart installs it.
	crd, err := exec.Command(env.HelmBin("helm4"), "template", "x", filepath.Join(root, "charts/helm-drift"),
		"--set", "serve.openreports.installCRD=true", "-s", "templates/openreports-crd.yaml").Output()
	if err != nil {
		t.Fatalf("helm template the Report CRD: %v", err)
	}
	applyJSON(t, env, strings.TrimPrefix(strings.TrimSpace(string(crd)), "---\n"))
	testenv.Eventually(t, 30*time.Second, "the Report kind served", func() (bool, string) {
		_, err := env.Dynamic.Resource(reportstore.Reports).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})

	// The API front: every write serve makes, and those to Reports.
	var writes, reportWrites atomic.Int64
	front := testenv.APIFront(t, env.Config, true, func(w http.ResponseWriter, r *http.Request, forward func() int) {
		if r.Method != http.MethodGet {
			writes.Add(1)
			if strings.Contains(r.URL.Path, "/apis/openreports.io/") {
				reportWrites.Add(1)
			}
		}
		forward()
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kubeconfig, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: front\n  cluster: {server: %s, insecure-skip-tls-verify: true}\nusers:\n- name: any\n  user: {token: front}\ncontexts:\n- name: front\n  context: {cluster: front, user: any}\ncurrent-context: front\n", front.URL)), 0o600)

	before := runServe(t, baseline, kubeconfig, 5, &writes, &reportWrites)
	memory := runServe(t, bin, kubeconfig, 5, &writes, &reportWrites, "--openreports=false")
	first := runServe(t, bin, kubeconfig, 5, &writes, &reportWrites)
	again := runServe(t, bin, kubeconfig, 3, &writes, &reportWrites)

	w := os.Stdout
	fmt.Fprintf(w, "\nserve's history over %d webapp releases in %d namespaces, %d drifted (replicas moved by kubectl-scale), local API server:\n", releases, namespaces, releases/10)
	fmt.Fprintf(w, "  %-44s %8s %10s  %s\n", "serve", "runs", "peak RSS", "writes per run (to Reports)")
	for _, r := range []struct {
		what string
		run  historyRun
	}{{"before the history (" + beforeHistory + ")", before}, {"history in memory (--openreports=false)", memory}, {"history in Reports", first}, {"history in Reports, restarted", again}} {
		fmt.Fprintf(w, "  %-44s %8d %10s  %s\n", r.what, len(r.run.runs), mib(r.run.maxRSS), r.run.writes())
	}
	fmt.Fprintf(w, "  peak RSS with the history in Reports: %.2fx the serve before it (target <= 1.2x); in memory %.2fx\n",
		float64(first.maxRSS)/float64(before.maxRSS), float64(memory.maxRSS)/float64(before.maxRSS))
	if first.runs[0].reports < releases {
		t.Errorf("the first run wrote %d Reports, want one per release (%d)", first.runs[0].reports, releases)
	}
	for i, r := range first.runs[1:] {
		if r.writes != 0 {
			t.Errorf("steady run %d wrote %d times (%d to Reports), want 0", i+2, r.writes, r.reports)
		}
	}
	for i, r := range again.runs {
		if r.writes != 0 {
			t.Errorf("run %d after the restart wrote %d times (%d to Reports), want 0", i+1, r.writes, r.reports)
		}
	}
}

// historyRun is what one serve process did: each run's writes, its peak RSS.
type historyRun struct {
	runs   []struct{ writes, reports int64 }
	maxRSS int64
}

func (h historyRun) writes() string {
	var s []string
	for _, r := range h.runs {
		s = append(s, fmt.Sprintf("%d (%d)", r.writes, r.reports))
	}
	return strings.Join(s, ", ")
}

// runServe runs serve (every 5 s) through kubeconfig for n runs, then SIGTERM; writes and
// reports are the API front's counters, read at the end of each run.
func runServe(t *testing.T, bin, kubeconfig string, n int, writes, reports *atomic.Int64, extra ...string) historyRun {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--interval", "5s", "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--auth", "none", "--tls=false"}, extra...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	var h historyRun
	var w0, r0 int64
	read := func() (int64, int64) { return writes.Load(), reports.Load() }
	w0, r0 = read()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for len(h.runs) < n && sc.Scan() {
		var line struct{ Msg, Error string }
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case "run failed":
			cmd.Process.Kill()
			t.Fatalf("serve: the run failed: %s", line.Error)
		case "run finished":
			// A run's Reports are written before it logs its end.
			w1, r1 := read()
			h.runs = append(h.runs, struct{ writes, reports int64 }{w1 - w0, r1 - r0})
			w0, r0 = w1, r1
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	h.maxRSS = peak()
	return h
}

// buildAt builds cmd/helm-drift as it was at commit rev (a detached worktree, removed after).
func buildAt(t *testing.T, root, rev string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", dir, rev).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s: %v\n%s", rev, err, out)
	}
	defer exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run()
	bin := filepath.Join(t.TempDir(), "helm-drift-"+rev)
	build := exec.Command("go", "build", "-o", bin, "./cmd/helm-drift")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build at %s: %v\n%s", rev, err, out)
	}
	return bin
}
