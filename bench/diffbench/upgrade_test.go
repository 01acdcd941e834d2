package diffbench

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var (
	upgradeChart = flag.String("upgrade-chart", "", "a chart directory for TestUpgradeCompare to measure instead of the corpus chart with the largest stream (make bench passes one that scripts/modchart.sh assembles from the module proxy)")
	upgradeArgs  = flag.String("upgrade-chart-args", "", "helm install and upgrade arguments for -upgrade-chart, split at spaces")
)

// TestUpgradeCompare prints, with -compare (make bench), one `diff upgrade` of a large chart
// against `helm diff upgrade --three-way-merge` for the same upgrade, paired runs in one
// session: helm-drift in auto and offline mode and without the chart's crds/ (--skip-crds),
// and its ratio to helm-diff with and without --include-crds (the target: at most 0.3x). The
// chart is -upgrade-chart, or else the corpus chart with the largest rendered stream (the
// corpus sits beside the checkout in CI; without either the test skips).
func TestUpgradeCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	var c testenv.CorpusChart
	var chart, what string
	if *upgradeChart != "" {
		chart, what = *upgradeChart, "chart "+filepath.Base(*upgradeChart)
		c = testenv.CorpusChart{Path: chart, Release: "big", Namespace: "big", Args: strings.Fields(*upgradeArgs)}
	}
	corpus, charts, ok := testenv.Corpus(t)
	if chart == "" && !ok {
		t.Skipf("corpus: %s not found (it sits beside the checkout in CI), and no -upgrade-chart", corpus)
	}
	env, bin := startBench(t)
	helm, base := helmDiffEnv(t, env)

	// template renders c's chart at path as the benchmark sizes it.
	template := func(c testenv.CorpusChart, path string) run {
		return measure(t, base, helm, append([]string{"template", c.Release, path, "-n", c.Namespace, "--kube-version", "1.37.0"}, c.Args...)...)
	}
	size := 0
	if chart == "" {
		// The chart whose stream is the largest: where rendering costs most.
		best := -1
		for i, c := range charts {
			r := template(c, filepath.Join(corpus, c.Path))
			if r.code == 0 && len(r.out) > size {
				best, size = i, len(r.out)
			}
		}
		if best < 0 {
			t.Fatal("no corpus chart renders")
		}
		c = charts[best]
		chart, what = filepath.Join(corpus, c.Path), "corpus chart "+c.Path
	} else {
		r := template(c, chart)
		if r.code != 0 {
			t.Fatalf("helm template %s: %s", chart, r.stderr)
		}
		size = len(r.out)
	}
	if r := measure(t, base, helm, append([]string{"install", c.Release, chart, "-n", c.Namespace, "--create-namespace"}, c.Args...)...); r.code != 0 {
		t.Fatalf("helm install %s: %s", c.Path, r.stderr)
	}
	upgrade := append([]string{"upgrade", c.Release, chart, "-n", c.Namespace}, c.Args...)
	var auto, offline, skip, hd, hdCRDs []run
	for range *runs {
		auto = append(auto, measure(t, base, bin, append([]string{"diff"}, upgrade...)...))
		skip = append(skip, measure(t, base, bin, append(append([]string{"diff"}, upgrade...), "--skip-crds")...))
		offline = append(offline, measure(t, base, bin, append(append([]string{"diff"}, upgrade...), "--normalize", "offline")...))
		hd = append(hd, measure(t, base, helm, append([]string{"diff"}, append(upgrade, "--three-way-merge")...)...))
		hdCRDs = append(hdCRDs, measure(t, base, helm, append([]string{"diff"}, append(upgrade, "--three-way-merge", "--include-crds")...)...))
	}
	for _, rs := range [][]run{auto, offline, skip, hd, hdCRDs} {
		for _, r := range rs {
			if r.code != 0 && r.code != 2 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
		}
	}
	ma, mo, ms, mh, mc := median(auto), median(offline), median(skip), median(hd), median(hdCRDs)
	fmt.Printf("\ndiff upgrade of %s (%d KB rendered), unchanged values, median of %d paired runs:\n", what, size/1024, *runs)
	fmt.Printf("  %-44s %8s %8s %18s\n", "", "wall", "ratio", "vs --include-crds")
	row := func(name string, r run) {
		fmt.Printf("  %-44s %8s %7.2fx %17.2fx\n", name, r.wall.Round(time.Millisecond), r.wall.Seconds()/mh.wall.Seconds(), r.wall.Seconds()/mc.wall.Seconds())
	}
	row("helm drift diff upgrade (auto)", ma)
	row("helm drift diff upgrade --normalize offline", mo)
	row("helm drift diff upgrade --skip-crds (auto)", ms)
	row("helm diff upgrade --three-way-merge", mh)
	row("helm diff upgrade ... --include-crds", mc)
	fmt.Printf("  target: helm-drift at most 0.30x; helm-drift compares the chart's crds/ too (unless --skip-crds), which helm-diff leaves out unless --include-crds\n")
}
