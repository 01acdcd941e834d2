package diffbench

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var (
	treeReleases = flag.Int("tree-helmreleases", 200, "HelmReleases in TestTreeCompare's generated repository")
	treeKeep     = flag.String("tree-keep", "", "a directory to keep TestTreeCompare's repository and chart cache in, for profiling a run by hand (docs/development.md)")
)

// TestTreeCompare measures "diff tree" on a generated Flux repository of 200 HelmReleases over
// the corpus charts (a bootstrap Kustomization, a Kustomization of apps, the charts served by a
// local HTTP Helm repository, versions pinned) and a pull request touching one of them, beside
// "helm template" of the same charts, in one run: cold (charts fetched, nothing built before),
// warm (from the chart and build caches) and changed-only times (the head as the Action gives
// it, the working tree, edited anew each run, and as a commit, --head HEAD). Targets: the warm changed-only run within 2x helm template of
// that one chart; the whole tree (--all, warm) within 1.5x the sum of the 200 helm templates.
// Beside them, flate v0.6.5 (the offline Flux renderer a user would pick instead; built by
// scripts/tools.sh with Go 1.27.3) on the same repository: its whole-tree render of the head
// (flate build hr), cold, warm and warm with its render caches off, and its changed-only diff
// (flate diff hr --base HEAD~1, as its Action runs it), in turn with the others.
func TestTreeCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	corpus, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Skip("../shared/corpus is absent")
	}
	root := testenv.RepoRoot()
	out, err := exec.Command("bash", filepath.Join(root, "scripts/tools.sh"), "helm4").Output()
	if err != nil {
		t.Fatalf("scripts/tools.sh helm4: %v", err)
	}
	helm := filepath.Join(strings.TrimSpace(string(out)), "helm4")
	bin := filepath.Join(t.TempDir(), "helm-drift")
	build := exec.Command("go", "build", "-o", bin, "./cmd/helm-drift")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := t.TempDir()
	env := append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "NO_COLOR=1", "KUBECONFIG="+filepath.Join(home, "none"))

	// The charts, packaged into an HTTP Helm repository.
	repoDir := t.TempDir()
	type chartInfo struct {
		name, version, tgz string
		values             map[string]any
	}
	var infos []chartInfo
	for _, c := range charts {
		if r := measure(t, env, helm, "package", filepath.Join(corpus, c.Path), "-d", repoDir); r.code != 0 {
			t.Fatalf("helm package %s: %s", c.Path, r.stderr)
		}
		var meta struct{ Name, Version string }
		data, _ := os.ReadFile(filepath.Join(corpus, c.Path, "Chart.yaml"))
		if err := sigsyaml.Unmarshal(data, &meta); err != nil {
			t.Fatal(err)
		}
		vals := c.Values(t)
		infos = append(infos, chartInfo{name: meta.Name, version: meta.Version, tgz: filepath.Join(repoDir, meta.Name+"-"+meta.Version+".tgz"), values: vals})
	}
	if r := measure(t, env, helm, "repo", "index", repoDir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repoDir)))
	t.Cleanup(srv.Close)

	// The repository: base, then a pull request that edits one HelmRelease's values.
	repo := t.TempDir()
	files := map[string]string{
		"clusters/bench/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://git.example.com/fleet.git, interval: 1m, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/bench, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"clusters/bench/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: corpus, namespace: flux-system}
spec: {url: "` + srv.URL + `", interval: 1h}
`,
	}
	hrFile := func(i int, touch string) string {
		c := infos[i%len(infos)]
		vals := map[string]any{}
		for k, v := range c.values {
			vals[k] = v
		}
		if touch != "" {
			vals["benchTouch"] = touch
		}
		v, _ := sigsyaml.Marshal(map[string]any{"values": vals})
		return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: hr-%03d, namespace: bench-%d}
spec:
  interval: 1h
  chart:
    spec: {chart: %s, version: %q, sourceRef: {kind: HelmRepository, name: corpus, namespace: flux-system}}
  install: {disableWait: true}
%s`, i, i%10, c.name, c.version, indent(string(v)))
	}
	for i := 0; i < *treeReleases; i++ {
		files[fmt.Sprintf("apps/hr-%03d.yaml", i)] = hrFile(i, "")
	}
	for name, text := range files {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=b@example.com", "-c", "user.name=b"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitRun("init", "-q")
	gitRun("add", "-A")
	gitRun("commit", "-qm", "base")
	const touched = 7
	if err := os.WriteFile(filepath.Join(repo, fmt.Sprintf("apps/hr-%03d.yaml", touched)), []byte(hrFile(touched, "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun("commit", "-qam", "the pull request")

	cache, builds := filepath.Join(t.TempDir(), "charts"), filepath.Join(t.TempDir(), "builds")
	// tree runs diff tree of HEAD~1 against head: "" the working tree (as the Action runs it,
	// on the pull request's checkout), "HEAD" the commit (both sides extracted by git). Its
	// chart cache and build cache (the revisions and file builds kept between runs) are the
	// run's own: the first run is cold.
	tree := func(all bool, head string) run {
		args := []string{"diff", "tree", "--base", "HEAD~1", "--kube-version", "v1.34.2", "--chart-cache", cache, "--build-cache", builds, "-o", "counts"}
		if head != "" {
			args = append(args, "--head", head)
		}
		if all {
			args = append(args, "--all")
		}
		r := measureIn(t, repo, env, bin, args...)
		if r.code != 0 && r.code != 2 {
			t.Fatalf("diff tree: exit %d\n%s%s", r.code, r.out, r.stderr)
		}
		return r
	}
	cold := tree(true, "HEAD")
	warm := tree(true, "HEAD")
	if *treeKeep != "" {
		if out, err := exec.Command("cp", "-a", repo, filepath.Join(*treeKeep, "repo")).CombinedOutput(); err != nil {
			t.Fatalf("-tree-keep: %v\n%s", err, out)
		}
		if out, err := exec.Command("cp", "-a", cache, filepath.Join(*treeKeep, "charts")).CombinedOutput(); err != nil {
			t.Fatalf("-tree-keep: %v\n%s", err, out)
		}
	}
	// flate: its own chart and render caches, its progress lines off; the same Kubernetes
	// version. It exits 0 whatever it finds: each run's output is checked instead.
	var flate func(args ...string) run
	flateNote := ""
	if out, err := exec.Command("bash", filepath.Join(root, "scripts/tools.sh"), "flate").CombinedOutput(); err != nil {
		flateNote = "not run: scripts/tools.sh flate failed: " + lastLine(string(out))
	} else {
		flateBin := filepath.Join(lastLine(string(out)), "flate")
		flateEnv := append(env, "FLATE_NO_PROGRESS=1", "FLATE_CACHE_DIR="+filepath.Join(t.TempDir(), "flate"), "FLATE_KUBE_VERSION=1.34.2")
		flate = func(args ...string) run {
			r := measureIn(t, repo, flateEnv, flateBin, args...)
			if r.code != 0 {
				t.Fatalf("flate %v: exit %d\n%s", args, r.code, r.stderr)
			}
			return r
		}
	}
	flateBuild := func(extra ...string) run {
		r := flate(append([]string{"build", "hr", "--path", "."}, extra...)...)
		if n := strings.Count(r.out, "\nkind: "); n < *treeReleases {
			t.Fatalf("flate build hr: %d objects for %d HelmReleases\n%s", n, *treeReleases, r.stderr)
		}
		return r
	}
	var flateCold, flateWarm, flateNoCache run
	if flate != nil {
		flateCold = flateBuild()
		flateWarm = flateBuild()
		flateNoCache = flateBuild("--helm-render-cache-mb", "0", "--helm-template-cache-mb", "0", "--kustomize-render-cache-mb", "0")
	}

	var sum time.Duration
	var oneArgs []string
	for i := 0; i < *treeReleases; i++ {
		c := infos[i%len(infos)]
		args := []string{"template", fmt.Sprintf("hr-%03d", i), c.tgz, "-n", fmt.Sprintf("bench-%d", i%10), "--kube-version", "v1.34.2"}
		for k, v := range c.values {
			args = append(args, "--set", fmt.Sprintf("%s=%v", k, v))
		}
		r := measure(t, env, helm, args...)
		if r.code != 0 {
			t.Fatalf("helm template %s: %s", c.name, r.stderr)
		}
		sum += r.wall
		if i == touched {
			oneArgs = args
		}
	}
	// The changed-only runs and the one chart's helm template take a few hundred milliseconds:
	// each is the median of seven runs, taken in turn so that they see the machine alike.
	// The pull request's value is one the chart does not read: flate rightly prints no
	// change. Its log says that it reconciled the HelmReleases and none failed.
	if flate != nil {
		r := flate("diff", "hr", "--base", "HEAD~1", "--path", ".", "--log-level", "debug")
		if !strings.Contains(r.stderr, "msg=\"reconcile complete\"") || !strings.Contains(r.stderr, " failed=0") || strings.Contains(r.stderr, "helm_releases=0") {
			t.Fatalf("flate diff hr: its log does not say every HelmRelease reconciled\n%s", r.stderr)
		}
	}
	// Each changed-only run of the working tree sees the pull request edited anew (another
	// value), as a push to it brings: its file is in no cache, its render new; the base is
	// the one a run before read. --head HEAD runs the same commit again (a job run again).
	edited := filepath.Join(repo, fmt.Sprintf("apps/hr-%03d.yaml", touched))
	var changed, changedHead, one, flateChanged []time.Duration
	for i := range 7 {
		if err := os.WriteFile(edited, []byte(hrFile(touched, fmt.Sprintf("edit-%d", i))), 0o644); err != nil {
			t.Fatal(err)
		}
		changed = append(changed, tree(false, "").wall)
		changedHead = append(changedHead, tree(false, "HEAD").wall)
		one = append(one, measure(t, env, helm, oneArgs...).wall)
		if flate != nil {
			flateChanged = append(flateChanged, flate("diff", "hr", "--base", "HEAD~1", "--path", ".").wall)
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", a.Seconds()/b.Seconds()) }
	c, ch, o := median(changed), median(changedHead), median(one)
	if flate != nil {
		fc := median(flateChanged)
		flateNote = fmt.Sprintf("\n"+
			"  flate v0.6.5 build hr (every HelmRelease, the head only), cold  %8s  %s of the helm templates' sum\n"+
			"  flate build hr, warm (its chart and render caches)             %8s  %s\n"+
			"  flate build hr, warm, its render caches off                    %8s  %s\n"+
			"  flate diff hr --base HEAD~1 (its changed-only mode), warm      %8s  %s of helm template of that chart; diff tree changed-only is %s of it",
			flateCold.wall.Round(time.Millisecond), ratio(flateCold.wall, sum),
			flateWarm.wall.Round(time.Millisecond), ratio(flateWarm.wall, sum),
			flateNoCache.wall.Round(time.Millisecond), ratio(flateNoCache.wall, sum),
			fc.Round(time.Millisecond), ratio(fc, o), ratio(c, fc))
	} else {
		flateNote = "\n  flate v0.6.5: " + flateNote
	}
	t.Logf("\n%d HelmReleases over %d corpus charts; a pull request touching hr-%03d (%s)\n"+
		"  diff tree --all, cold (charts fetched)        %8s  %s of the helm templates' sum\n"+
		"  diff tree --all, warm (chart, build caches)   %8s  %s of the helm templates' sum (target 1.5x)\n"+
		"  diff tree, changed only, warm                 %8s  %s of helm template of that chart (target 2x; head: the working tree edited anew each run, as the Action runs it)\n"+
		"  diff tree, changed only, warm, --head HEAD    %8s  %s of helm template of that chart (both sides from git, the same commit each run)\n"+
		"  helm template x %d, one after another         %8s\n"+
		"  helm template of hr-%03d's chart              %8s\n"+
		"  (changed-only runs, flate's and the one chart's template: medians of 7 runs each, in turn)%s",
		*treeReleases, len(infos), touched, infos[touched%len(infos)].name,
		cold.wall.Round(time.Millisecond), ratio(cold.wall, sum),
		warm.wall.Round(time.Millisecond), ratio(warm.wall, sum),
		c.Round(time.Millisecond), ratio(c, o),
		ch.Round(time.Millisecond), ratio(ch, o),
		*treeReleases, sum.Round(time.Millisecond), touched, o.Round(time.Millisecond), flateNote)
}

// indent indents YAML text under spec.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
