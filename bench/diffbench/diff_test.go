// Package diffbench compares `helm drift diff upgrade` with `helm diff upgrade --three-way-merge`
// (helm-diff v3.13.2, the alternative a user would pick) on a 1,000-object release in the real
// test environment, in one run: wall time, API requests, peak memory and whether out-of-band
// edits are found. Run by make bench (-compare); skipped otherwise.
package diffbench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/cli"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

var (
	compare = flag.Bool("compare", false, "install a 1,000-object release in the test environment and compare helm-drift diff with helm-diff")
	runs    = flag.Int("runs", 3, "runs of each tool; the median is reported")
	heapDir = flag.String("heapprofile", "", "write, into this directory, the heap profile at the live-heap peak of each in-process diff (go tool pprof -sample_index=inuse_space)")
)

// run is one measured command.
type run struct {
	wall   time.Duration
	maxRSS int64 // KiB, of the process itself (see watchRSS)
	out    string
	stderr string
	code   int
}

func measure(t *testing.T, env []string, name string, args ...string) run {
	t.Helper()
	return measureIn(t, "", env, name, args...)
}

// measureIn is measure with the command run in dir ("": the test's own).
func measureIn(t *testing.T, dir string, env []string, name string, args ...string) run {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	peak := watchRSS(cmd.Process.Pid)
	err := cmd.Wait()
	r := run{wall: time.Since(start), out: out.String(), stderr: errOut.String(), maxRSS: peak()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// watchRSS follows a started process's peak RSS (VmHWM in /proc/PID/status, sampled every 2
// ms) until the returned func is called after the process has exited; it returns KiB.
// wait4's ru_maxrss would not do: a child forked from this test process counts the test's
// own pages from before its exec, so every command measured from here showed at least the
// test's size. VmHWM is the process's own high-water mark, which its exec starts afresh.
func watchRSS(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	status := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		defer close(stopped)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(status); err == nil {
				if _, rest, ok := strings.Cut(string(b), "VmHWM:"); ok {
					f := strings.Fields(rest)
					if len(f) > 0 {
						if kib, err := strconv.ParseInt(f[0], 10, 64); err == nil && kib > peak.Load() {
							peak.Store(kib)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

func median(rs []run) run {
	slices.SortFunc(rs, func(a, b run) int { return int(a.wall - b.wall) })
	return rs[len(rs)/2]
}

// startBench starts the test environment (stopped when the test ends) and builds helm-drift.
func startBench(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Stop() })
	bin := filepath.Join(t.TempDir(), "helm-drift")
	build := exec.Command("go", "build", "-o", bin, "./cmd/helm-drift")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return env, bin
}

func TestDiffCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	root := testenv.RepoRoot()
	env, bin := startBench(t)
	helm, base := helmDiffEnv(t, env)

	chart := filepath.Join(root, "testdata/charts/bulk")
	const ns = "bench"
	start := time.Now()
	if r := measure(t, base, helm, "install", "bulk", chart, "-n", ns, "--create-namespace", "--timeout", "10m"); r.code != 0 {
		t.Fatalf("helm install: %s", r.stderr)
	}
	t.Logf("helm install of the 1,000-object release: %v", time.Since(start).Round(time.Millisecond))
	tmpl := measure(t, base, helm, "template", "bulk", chart, "-n", ns)
	manifestSize := len(tmpl.out)

	// Out of band: an env var added with server-side apply by another manager, and an annotation.
	ctx := context.Background()
	apply := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app-007"},"spec":{"selector":{"matchLabels":{"app":"app-007"}},
		"template":{"metadata":{"labels":{"app":"app-007"}},"spec":{"containers":[{"name":"web","env":[{"name":"INJECTED_BY_SIDECAR","value":"1"}]}]}}}}`
	if _, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns).
		Patch(ctx, "app-007", types.ApplyPatchType, []byte(apply), metav1.PatchOptions{FieldManager: "sidecar-injector"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Patch(ctx, "app-011-settings", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"bench.example.com/edited-by-hand":"yes"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}

	upgrade := []string{"upgrade", "bulk", chart, "-n", ns, "--set", "image=nginx:1.28"}
	measureAll := func(name string, args ...string) run {
		var rs []run
		for i := 0; i < *runs; i++ {
			rs = append(rs, measure(t, base, name, args...))
		}
		return median(rs)
	}
	offline := measureAll(bin, append(append([]string{"diff"}, upgrade...), "--normalize", "offline", "--stats", "-o", "json")...)
	auto := measureAll(bin, append(append([]string{"diff"}, upgrade...), "--stats", "-o", "json")...)
	hd := measureAll(helm, append([]string{"diff"}, append(upgrade, "--three-way-merge")...)...)
	for _, r := range []run{offline, auto} {
		if r.code != 2 {
			t.Fatalf("helm-drift diff: exit %d\n%s", r.code, r.stderr)
		}
	}
	if hd.code != 0 && hd.code != 2 {
		t.Fatalf("helm diff: exit %d\n%s", hd.code, hd.stderr)
	}

	// Memory, in process: first the same upgrade of a 4-object release (it pays the one-time
	// loading of kyaml's OpenAPI data), then the 1,000-object one, whose peak is then what the
	// release itself costs.
	// The 4-object release has a namespace of its own: in the bulk release's, its LISTs would
	// read the 1,000 objects too, and the baseline would hold what is to be measured.
	small := filepath.Join(root, "testdata/charts/webapp")
	if r := measure(t, base, helm, "install", "small", small, "-n", "bench-small", "--create-namespace"); r.code != 0 {
		t.Fatalf("helm install small: %s", r.stderr)
	}
	smallArgs := []string{"diff", "upgrade", "small", small, "-n", "bench-small", "--set", "image=nginx:1.28", "--normalize", "offline", "-o", "json", "--kubeconfig", env.Kubeconfig}
	bulkArgs := append([]string{"diff"}, append(upgrade, "--normalize", "offline", "-o", "json", "--kubeconfig", env.Kubeconfig)...)
	smallPeak := inProcessPeak(t, smallArgs, 2)
	heapPeak := inProcessPeak(t, bulkArgs, 2)
	// What the run must hold (the live heap after each GC, garbage left out), above what the
	// 4-object release holds (the program's own start-up: schemes, OpenAPI data, discovery),
	// against the live objects' own decoded size.
	smallLive := inProcessLive(t, "small", smallArgs, 2)
	bulkLive := inProcessLive(t, "bulk", bulkArgs, 2)
	held := heldObjects(t, env, ns)
	releaseLive := bulkLive - smallLive
	// The same with every GC stopping the world (in a child process: GODEBUG is read at
	// start). A concurrent GC counts as live what the program allocates while it marks, which
	// while the objects are measured at full speed is several MiB of garbage; stopped, the
	// live heap after a GC is what the run holds at that moment.
	stwSmall, stwBulk := liveStoppedWorld(t, smallArgs, bulkArgs)
	stwRelease := stwBulk - stwSmall

	found := func(out string) string {
		return fmt.Sprintf("env var %s, annotation %s", yes(strings.Contains(out, "INJECTED_BY_SIDECAR")), yes(strings.Contains(out, "bench.example.com/edited-by-hand")))
	}
	requests := func(r run) string {
		m := regexp.MustCompile(`(\d+) requests: (\d+) LIST`).FindStringSubmatch(r.stderr)
		if m == nil {
			return "?"
		}
		return fmt.Sprintf("%s LIST of %s requests", m[2], m[1])
	}
	var rep struct {
		Divergences int `json:"divergences"`
		Objects     []any
	}
	json.Unmarshal([]byte(offline.out), &rep)
	w := io.Writer(os.Stdout)
	fmt.Fprintf(w, "\ndiff of a %d-object release (%d KB rendered manifest), helm upgrade --set image=nginx:1.28 plus two out-of-band edits,\n", len(rep.Objects), manifestSize/1024)
	fmt.Fprintf(w, "local API server, median of %d runs (GOMAXPROCS %d):\n", *runs, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "  %-44s %8s  %-28s %-14s %s\n", "", "wall", "API requests", "peak RSS", "found out-of-band")
	fmt.Fprintf(w, "  %-44s %8s  %-28s %-14s %s\n", "helm drift diff upgrade --normalize offline", offline.wall.Round(time.Millisecond), requests(offline), mib(offline.maxRSS), found(offline.out))
	fmt.Fprintf(w, "  %-44s %8s  %-28s %-14s %s\n", "helm drift diff upgrade (auto: dry-runs)", auto.wall.Round(time.Millisecond), requests(auto), mib(auto.maxRSS), found(auto.out))
	fmt.Fprintf(w, "  %-44s %8s  %-28s %-14s %s\n", "helm diff upgrade --three-way-merge", hd.wall.Round(time.Millisecond), "-", mib(hd.maxRSS)+" (helm)", found(hd.out))
	fmt.Fprintf(w, "  wall-time ratio helm-drift/helm-diff: offline %.2f, auto %.2f (target <= 0.50)\n",
		offline.wall.Seconds()/hd.wall.Seconds(), auto.wall.Seconds()/hd.wall.Seconds())
	fmt.Fprintf(w, "  heap peak, in process, of diff upgrade --normalize offline: 4-object release, first run (kyaml's OpenAPI data loaded): %s;\n", mib(smallPeak/1024))
	fmt.Fprintf(w, "  1,000-object release, after it: %s = %.1fx the rendered manifest (target < 5x); process peak RSS %s either way\n",
		mib(heapPeak/1024), float64(heapPeak)/float64(manifestSize), mib(offline.maxRSS))
	fmt.Fprintf(w, "  live heap after each GC, in process (concurrent GC: counts what is allocated while it marks): 4-object release %s, 1,000-object release %s; the release's own %s = %s live objects (decoded LISTs) + %s = %.1fx the manifest beyond them\n",
		mib(smallLive/1024), mib(bulkLive/1024), mib(releaseLive/1024), mib(held/1024), mib((releaseLive-held)/1024), float64(releaseLive-held)/float64(manifestSize))
	fmt.Fprintf(w, "  live heap after each GC stopping the world (what the run holds): 4-object release %s, 1,000-object release %s; the release's own %s = %s live objects + %s = %.1fx the manifest beyond them (target <= 10x)\n",
		mib(stwSmall/1024), mib(stwBulk/1024), mib(stwRelease/1024), mib(held/1024), mib((stwRelease-held)/1024), float64(stwRelease-held)/float64(manifestSize))
	fmt.Fprintf(w, "  kinds x namespaces in the release: 4 (ConfigMap, Secret, Service, Deployment in %s); the other LISTs are the Helm SDK reading its release storage\n", ns)
	if !strings.Contains(offline.out, "INJECTED_BY_SIDECAR") || !strings.Contains(offline.out, "bench.example.com/edited-by-hand") {
		t.Errorf("helm-drift diff missed an out-of-band edit")
	}
}

// helmDiffEnv returns the Helm 3 CLI and an environment in which helm-diff v3.13.2 is its
// plugin, the way users run it, against env's cluster.
func helmDiffEnv(t *testing.T, env *testenv.Env) (string, []string) {
	t.Helper()
	helm := env.HelmBin("helm3")
	helmDiff := filepath.Join(filepath.Dir(helm), "helm-diff")
	// Only the benchmarks use helm-diff: scripts/tools.sh builds it on request (once, cached).
	if out, err := exec.Command("bash", filepath.Join(testenv.RepoRoot(), "scripts/tools.sh"), "helm-diff").CombinedOutput(); err != nil {
		t.Fatalf("scripts/tools.sh helm-diff: %v\n%s", err, out)
	}
	// helm-diff as a Helm plugin, the way users run it.
	home := t.TempDir()
	plugins := filepath.Join(home, "plugins")
	os.MkdirAll(filepath.Join(plugins, "diff", "bin"), 0o755)
	os.WriteFile(filepath.Join(plugins, "diff", "plugin.yaml"), []byte("name: diff\nversion: 3.13.2\nusage: helm-diff\ndescription: helm-diff v3.13.2\nuseTunnel: true\ncommand: $HELM_PLUGIN_DIR/bin/diff\n"), 0o644)
	os.Symlink(helmDiff, filepath.Join(plugins, "diff", "bin", "diff"))
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HELM_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			base = append(base, kv)
		}
	}
	base = append(base, "KUBECONFIG="+env.Kubeconfig, "HELM_PLUGINS="+plugins, "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"), "NO_COLOR=1")

	return helm, base
}

// inProcessPeak runs helm-drift in this process and returns the peak heap in use above the
// heap before it, sampled every millisecond.
func inProcessPeak(t *testing.T, args []string, wantCode int) int64 {
	return inProcessMax(t, args, wantCode, func() int64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapInuse)
	})
}

// inProcessLive runs helm-drift in this process and returns the most the heap held live
// after any GC during the run (runtime/metrics /gc/heap/live:bytes), above what it held before.
// With -heapprofile, the heap profile at that peak (the live objects of the GC that found it)
// is written to the directory as name.pprof.
func inProcessLive(t *testing.T, name string, args []string, wantCode int) int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak int64
	var profile bytes.Buffer
	if *heapDir != "" {
		runtime.MemProfileRate = 4096 // the run's allocations sampled finely
	}
	live := inProcessMax(t, args, wantCode, func() int64 {
		metrics.Read(sample)
		v := int64(sample[0].Value.Uint64())
		if *heapDir != "" && v > peak {
			peak = v
			profile.Reset()
			pprof.Lookup("heap").WriteTo(&profile, 0)
		}
		return v
	})
	if *heapDir != "" {
		path := filepath.Join(*heapDir, name+".pprof")
		if err := os.WriteFile(path, profile.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("heap profile at the live peak of %s: %s", name, path)
	}
	return live
}

// inProcessMax runs helm-drift in this process (after a GC) and returns the most read gave,
// sampled every millisecond during the run, above what it gave before.
func inProcessMax(t *testing.T, args []string, wantCode int, read func() int64) int64 {
	runtime.GC()
	base := read()
	peak := base
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				peak = max(peak, read())
			}
		}
	}()
	code := cli.Run(args, strings.NewReader(""), io.Discard, io.Discard)
	close(done)
	<-stopped
	if code != wantCode {
		t.Fatalf("in-process diff %s: exit %d, want %d", strings.Join(args, " "), code, wantCode)
	}
	return peak - base
}

// heldObjects is the heap the release's live objects take decoded as the diff decodes them
// (each LIST into an unstructured list, as client-go's dynamic client decodes it): each kind's
// LIST in ns, read and decoded here, measured live after a GC.
func heldObjects(t *testing.T, env *testenv.Env, ns string) int64 {
	var bodies [][]byte
	for _, path := range []string{"/apis/apps/v1/namespaces/" + ns + "/deployments", "/api/v1/namespaces/" + ns + "/services",
		"/api/v1/namespaces/" + ns + "/configmaps", "/api/v1/namespaces/" + ns + "/secrets"} {
		b, err := env.Kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := int64(ms.HeapAlloc)
	decoded := make([]unstructured.UnstructuredList, len(bodies))
	for i, b := range bodies {
		if err := decoded[i].UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - before
	runtime.KeepAlive(decoded)
	return held
}

func yes(b bool) string {
	if b {
		return "found"
	}
	return "MISSED"
}

func mib(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) + " MiB" }

// liveStoppedWorld runs inProcessLive for the two argument lists (after a first run of the
// first: it loads what the program loads once) in a child process of this test binary, every
// GC stopping the world, and returns the two live-heap peaks (medians of five runs).
func liveStoppedWorld(t *testing.T, small, bulk []string) (int64, int64) {
	t.Helper()
	args, _ := json.Marshal([][]string{small, bulk})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLiveHeapChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=gcstoptheworld=1", "HELM_DRIFT_BENCH_LIVE_ARGS="+string(args))
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`live-heap small=(\d+) bulk=(\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("the stopped-world live heap: %v\n%s", err, out)
	}
	a, _ := strconv.ParseInt(string(m[1]), 10, 64)
	b, _ := strconv.ParseInt(string(m[2]), 10, 64)
	return a, b
}

// TestLiveHeapChild is liveStoppedWorld's child: it runs only with
// HELM_DRIFT_BENCH_LIVE_ARGS set.
func TestLiveHeapChild(t *testing.T) {
	var lists [][]string
	if err := json.Unmarshal([]byte(os.Getenv("HELM_DRIFT_BENCH_LIVE_ARGS")), &lists); err != nil || len(lists) != 2 {
		t.Skip("the child of TestDiffCompare's stopped-world measurement")
	}
	inProcessLive(t, "small", lists[0], 2)
	// The peak is sampled every millisecond: the median of five runs of each.
	var small, bulk []int64
	for range 5 {
		small = append(small, inProcessLive(t, "small", lists[0], 2))
		bulk = append(bulk, inProcessLive(t, "bulk", lists[1], 2))
	}
	slices.Sort(small)
	slices.Sort(bulk)
	fmt.Printf("live-heap small=%d bulk=%d\n", small[2], bulk[2])
}
