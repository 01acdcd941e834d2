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

	"helm.sh/helm/v4/pkg/strvals"
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
// "helm template" of the same charts, in one run: cold (charts fetched), warm (from the chart
// cache) and changed-only times (the head as the Action gives it, the working tree, and as a
// commit, --head HEAD). Targets: the warm changed-only run within 2x helm template of
// that one chart; the whole tree (--all, warm) within 1.5x the sum of the 200 helm templates.
// flate v0.6.5 is not run: it needs Go 1.27 (GOTOOLCHAIN=go1.27.3), which this machine does not
// serve.
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
		vals := map[string]any{}
		for i := 0; i+1 < len(c.Args); i += 2 {
			if c.Args[i] == "--set" {
				if err := strvals.ParseInto(c.Args[i+1], vals); err != nil {
					t.Fatal(err)
				}
			}
		}
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

	cache := filepath.Join(t.TempDir(), "charts")
	// tree runs diff tree of HEAD~1 against head: "" the working tree (as the Action runs it,
	// on the pull request's checkout), "HEAD" the commit (both sides extracted by git).
	tree := func(all bool, head string) run {
		args := []string{"diff", "tree", "--base", "HEAD~1", "--kube-version", "v1.34.2", "--chart-cache", cache, "-o", "counts"}
		if head != "" {
			args = append(args, "--head", head)
		}
		if all {
			args = append(args, "--all")
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = repo, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		r := run{wall: time.Since(start), out: string(out)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		if r.code != 0 && r.code != 2 {
			t.Fatalf("diff tree: exit %d\n%s", r.code, out)
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
	var changed, changedHead, one []time.Duration
	for range 7 {
		changed = append(changed, tree(false, "").wall)
		changedHead = append(changedHead, tree(false, "HEAD").wall)
		one = append(one, measure(t, env, helm, oneArgs...).wall)
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", a.Seconds()/b.Seconds()) }
	c, ch, o := median(changed), median(changedHead), median(one)
	t.Logf("\n%d HelmReleases over %d corpus charts; a pull request touching hr-%03d (%s)\n"+
		"  diff tree --all, cold (charts fetched)        %8s  %s of the helm templates' sum\n"+
		"  diff tree --all, warm (chart cache)           %8s  %s of the helm templates' sum (target 1.5x)\n"+
		"  diff tree, changed only, warm                 %8s  %s of helm template of that chart (target 2x; head: the working tree, as the Action runs it)\n"+
		"  diff tree, changed only, warm, --head HEAD    %8s  %s of helm template of that chart (both sides extracted by git)\n"+
		"  helm template x %d, one after another         %8s\n"+
		"  helm template of hr-%03d's chart              %8s\n"+
		"  (changed-only runs and the one chart's template: medians of 7 runs each, in turn)\n"+
		"  flate v0.6.5: not run (needs Go 1.27 via GOTOOLCHAIN=go1.27.3, not served here)",
		*treeReleases, len(infos), touched, infos[touched%len(infos)].name,
		cold.wall.Round(time.Millisecond), ratio(cold.wall, sum),
		warm.wall.Round(time.Millisecond), ratio(warm.wall, sum),
		c.Round(time.Millisecond), ratio(c, o),
		ch.Round(time.Millisecond), ratio(ch, o),
		*treeReleases, sum.Round(time.Millisecond), touched, o.Round(time.Millisecond))
}

// indent indents YAML text under spec.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
