package diffbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestFleetCompare measures diff release -A over a fleet: 200, then 1,000 releases of the
// webapp chart (4 objects each, its Service headless: the test environment's service range has
// a few hundred addresses) across 10 namespaces, installed through the Helm 3 SDK in
// parallel. For each size, offline and auto: LIST requests (the target: kinds x namespaces,
// plus the release storage), discovery requests, wall time and peak RSS; then the ratio of the
// times (linear: at most 6x for 5x the releases), beside helm diff upgrade --three-way-merge
// looped over a sample of 20 releases and extrapolated to the fleet (as a user loops it).
func TestFleetCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	root := testenv.RepoRoot()
	env, bin := startBench(t)
	helm, base := helmDiffEnv(t, env)
	chartDir := filepath.Join(root, "testdata/charts/webapp")
	const namespaces = 10
	ctx := context.Background()
	for n := range namespaces {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace(n)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The same releases are also managed by suspended Flux HelmReleases (helm-controller leaves
	// them alone), their chart this chart from an OCIRepository in each namespace. Each release
	// is installed as helm-controller would render it (the chart version with the source
	// revision's digest, its origin labels), so that diff helmrelease -A, like diff release -A,
	// has nothing to find on a fresh fleet.
	revision := pushFleetChart(t, env, chartDir, namespaces)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	_, dig, _ := strings.Cut(revision, "@sha256:")
	if len(dig) < 12 {
		t.Fatalf("OCIRepository revision %q: no sha256 digest", revision)
	}
	ch.Metadata.Version += "+" + dig[:12]
	conf, err := action.NewConfiguration(action.KubeOptions{Kubeconfig: env.Kubeconfig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	installed := 0
	install := func(upTo int) {
		t.Helper()
		installFleet(t, conf, ch, installed, upTo, namespaces, func(in *helmaction.Install) {
			in.PostRenderer = helmcontroller.PostRenderer(&v2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: in.ReleaseName, Namespace: in.Namespace}})
		}, func(i int, ns, name string) error { return applyHelmRelease(env, name, ns) })
		installed = upTo
	}

	type row struct {
		releases int
		mode     string
		run      run
	}
	var rows, hrRows []row
	served := map[string]serveRun{} // by "releases console|metrics only"
	var hr run
	for _, size := range []int{200, 1000} {
		install(size)
		for _, verb := range []string{"release", "helmrelease"} {
			for _, mode := range []string{"offline", "auto"} {
				var rs []run
				for range *runs {
					r := measure(t, base, bin, "diff", verb, "-A", "--normalize", mode, "--stats")
					t.Logf("diff %s -A over %d, %s: %v, %s", verb, size, mode, r.wall.Round(time.Millisecond), r.stderr)
					if r.code != 0 {
						t.Fatalf("diff %s -A --normalize %s over %d fresh releases: exit %d\n%s%s", verb, mode, size, r.code, r.out, r.stderr)
					}
					rs = append(rs, r)
				}
				if verb == "release" {
					rows = append(rows, row{size, mode, median(rs)})
				} else {
					hrRows = append(hrRows, row{size, mode, median(rs)})
				}
			}
		}
		served[fmt.Sprint(size)+" console"] = measureServe(t, base, bin)
		served[fmt.Sprint(size)+" metrics only"] = measureServe(t, base, bin, "--console=false")
		if size == 200 {
			hr = measure(t, base, bin, "diff", "helmrelease", "-A", "--normalize", "offline", "--stats")
		}
	}
	// helm-diff, looped over a sample (it diffs one release per command).
	const sample = 20
	start := time.Now()
	for i := range sample {
		r := measure(t, base, helm, "diff", "upgrade", fmt.Sprintf("web-%04d", i), chartDir, "-n", fleetNamespace(i%namespaces), "--set", "headless=true", "--three-way-merge")
		if r.code != 0 && r.code != 2 {
			t.Fatalf("helm diff upgrade: exit %d\n%s", r.code, r.stderr)
		}
	}
	perRelease := time.Since(start) / sample

	stat := func(r run, what string) int {
		m := regexp.MustCompile(`(\d+) ` + what).FindStringSubmatch(r.stderr)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	w := os.Stdout
	fmt.Fprintf(w, "\ndiff release -A over a fleet of webapp releases (4 objects: ConfigMap, Secret, Service, Deployment) in %d namespaces,\n", namespaces)
	fmt.Fprintf(w, "local API server, median of %d runs; target LISTs = 4 kinds x %d namespaces = %d, plus the release storage:\n", *runs, namespaces, 4*namespaces)
	fmt.Fprintf(w, "  %-9s %-8s %8s %6s %10s %9s  %s\n", "releases", "mode", "requests", "LIST", "discovery", "wall", "peak RSS")
	for _, r := range rows {
		fmt.Fprintf(w, "  %-9d %-8s %8d %6d %10d %9s  %s\n", r.releases, r.mode, stat(r.run, "requests"), stat(r.run, "LIST"), stat(r.run, "discovery"), r.run.wall.Round(time.Millisecond), mib(r.run.maxRSS))
	}
	for i, mode := range []string{"offline", "auto"} {
		small, large := rows[i].run, rows[i+2].run
		fmt.Fprintf(w, "  %s: 1,000 releases took %.2fx the time of 200 (target <= 6x: linear)\n", mode, large.wall.Seconds()/small.wall.Seconds())
	}
	fmt.Fprintf(w, "diff helmrelease -A over the same releases, each managed by a suspended HelmRelease (chartRef: an OCIRepository per namespace; rendered as helm-controller):\n")
	fmt.Fprintf(w, "  %-9s %-8s %8s %6s %6s %10s %9s  %s\n", "HRs", "mode", "requests", "LIST", "GET", "discovery", "wall", "peak RSS")
	for _, r := range hrRows {
		fmt.Fprintf(w, "  %-9d %-8s %8d %6d %6d %10d %9s  %s\n", r.releases, r.mode, stat(r.run, "requests"), stat(r.run, "LIST"), stat(r.run, "GET"), stat(r.run, "discovery"), r.run.wall.Round(time.Millisecond), mib(r.run.maxRSS))
	}
	for i, mode := range []string{"offline", "auto"} {
		small, large := hrRows[i].run, hrRows[i+2].run
		fmt.Fprintf(w, "  %s: 1,000 HelmReleases took %.2fx the time of 200 (target <= 6x: linear)\n", mode, large.wall.Seconds()/small.wall.Seconds())
	}
	fmt.Fprintf(w, "  helm diff upgrade --three-way-merge, one command per release: %v each (mean of %d), so about %v for 200 and %v for 1,000 (extrapolated);\n",
		perRelease.Round(time.Millisecond), sample, (perRelease * 200).Round(time.Second), (perRelease * 1000).Round(time.Second))
	fmt.Fprintf(w, "  helm-drift auto over 1,000: %.3fx of that\n", rows[3].run.wall.Seconds()/(perRelease*1000).Seconds())
	for _, size := range []int{200, 1000} {
		with, without := served[fmt.Sprint(size)+" console"], served[fmt.Sprint(size)+" metrics only"]
		for _, r := range []struct {
			what string
			run  serveRun
		}{{"with the console", with}, {"--console=false", without}} {
			fmt.Fprintf(w, "  helm drift serve, one run over the %d (offline), %s: %s, %s of CPU, peak RSS %s; its requests: %s\n",
				size, r.what, r.run.took.Round(time.Millisecond), r.run.cpu.Round(time.Millisecond), mib(r.run.maxRSS), r.run.requests)
		}
		fmt.Fprintf(w, "  the console over %d releases: %.2fx the peak RSS, %.2fx the CPU (target <= 2x the memory)\n", size,
			float64(with.maxRSS)/float64(max(without.maxRSS, 1)), with.cpu.Seconds()/max(without.cpu.Seconds(), 0.001))
	}
	fmt.Fprintf(w, "  one fleet run by hand (offline): diff release -A %d requests (%d LIST) + diff helmrelease -A %d (%d LIST)\n",
		stat(rows[0].run, "requests"), stat(rows[0].run, "LIST"), stat(hr, "requests"), stat(hr, "LIST"))
	for _, r := range rows {
		if lists := stat(r.run, "LIST"); lists > 4*namespaces+namespaces+10 {
			t.Errorf("%d releases, %s: %d LISTs; want about %d (kinds x namespaces) plus the release storage", r.releases, r.mode, lists, 4*namespaces)
		}
	}
	for _, r := range hrRows {
		if lists := stat(r.run, "LIST"); lists > 4*namespaces+namespaces+10 {
			t.Errorf("%d HelmReleases, %s: %d LISTs; want about %d (kinds x namespaces) plus the HelmReleases and the release storage", r.releases, r.mode, lists, 4*namespaces)
		}
		if disc := stat(r.run, "discovery"); disc > 5 {
			t.Errorf("%d HelmReleases, %s: %d discovery requests; want discovery once", r.releases, r.mode, disc)
		}
	}
}

// pushFleetChart packages the chart at dir, pushes it to the test registry, makes an
// OCIRepository webapp for it in each fleet namespace and waits for source-controller's
// artifacts; it returns the artifact's revision (VERSION@sha256:DIGEST).
func pushFleetChart(t *testing.T, env *testenv.Env, dir string, namespaces int) string {
	t.Helper()
	home := t.TempDir()
	helm := env.HelmBin("helm4")
	base := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"), "NO_COLOR=1")
	if r := measure(t, base, helm, "package", dir, "-d", home); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pkgs, _ := filepath.Glob(filepath.Join(home, "*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package: %v", pkgs)
	}
	repo := "oci://" + env.Registry + "/fleet"
	if r := measure(t, base, helm, "push", pkgs[0], repo, "--plain-http"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for n := range namespaces {
		applyJSON(t, env, fmt.Sprintf(`{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"OCIRepository","metadata":{"name":"webapp","namespace":%q},
			"spec":{"url":%q,"ref":{"semver":">=1.0.0"},"insecure":true,"interval":"1h","layerSelector":{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","operation":"copy"}}}`,
			fleetNamespace(n), repo+"/webapp"))
	}
	repos := schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var revisions []string
		for n := range namespaces {
			o, err := env.Dynamic.Resource(repos).Namespace(fleetNamespace(n)).Get(context.Background(), "webapp", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rev, _, _ := unstructured.NestedString(o.Object, "status", "artifact", "revision"); rev != "" {
				revisions = append(revisions, rev)
			}
		}
		if len(revisions) == namespaces {
			return revisions[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d OCIRepositories have an artifact after 3 minutes", len(revisions), namespaces)
		}
	}
}

// applyHelmRelease makes the suspended HelmRelease that manages release ns/name.
func applyHelmRelease(env *testenv.Env, name, ns string) error {
	hr := fmt.Sprintf(`{"apiVersion":"helm.toolkit.fluxcd.io/v2","kind":"HelmRelease","metadata":{"name":%q,"namespace":%q},
		"spec":{"interval":"1h","suspend":true,"chartRef":{"kind":"OCIRepository","name":"webapp"},"values":{"headless":true}}}`, name, ns)
	force := true
	_, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}).Namespace(ns).
		Patch(context.Background(), name, types.ApplyPatchType, []byte(hr), metav1.PatchOptions{FieldManager: "bench", Force: &force})
	return err
}

func fleetNamespace(n int) string { return fmt.Sprintf("fleet-%02d", n) }

// installFleet installs releases web-FROM to web-(TO-1) of chart ch (values headless: true)
// through the Helm 3 SDK, eight at a time, release i in fleetNamespace(i % namespaces); before
// (may be nil) sets up each install, after (may be nil) follows each one.
func installFleet(t *testing.T, conf *action.Configuration, ch *chart.Chart, from, to, namespaces int,
	before func(in *helmaction.Install), after func(i int, ns, name string) error) {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 8)
	for i := from; i < to; i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ns, name := fleetNamespace(i%namespaces), fmt.Sprintf("web-%04d", i)
			cfg, err := conf.Helm3(ns)
			if err == nil {
				in := helmaction.NewInstall(cfg)
				in.ReleaseName, in.Namespace = name, ns
				if before != nil {
					before(in)
				}
				_, err = in.Run(ch, map[string]any{"headless": true})
			}
			if err == nil && after != nil {
				err = after(i, ns, name)
			}
			if err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("install: %v", err)
	}
	t.Logf("installed releases %d to %d in %v", from, to, time.Since(start).Round(time.Millisecond))
}

// serveRun is one run of helm drift serve as a process: how long the run took, the requests it
// logged, and the process's CPU and peak RSS up to its exit on SIGTERM.
type serveRun struct {
	took     time.Duration
	requests string
	cpu      time.Duration
	maxRSS   int64
}

// measureServe starts helm drift serve (offline, one run an hour, with extra flags), waits for its first run to
// end, stops it with SIGTERM and returns what the run cost.
func measureServe(t *testing.T, env []string, bin string, extra ...string) serveRun {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--interval", "1h", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	var r serveRun
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct {
			Msg      string
			Duration float64 `json:"duration_seconds"`
			Requests string
			Error    string
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Msg == "run failed" {
			cmd.Process.Kill()
			t.Fatalf("serve: the run failed: %s", line.Error)
		}
		if line.Msg == "run finished" {
			r.took, r.requests = time.Duration(line.Duration*float64(time.Second)), line.Requests
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	r.maxRSS = peak()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}
