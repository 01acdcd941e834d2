package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/diff/difftest"
	"github.com/helm-drift/helm-drift/internal/golden"
	"github.com/helm-drift/helm-drift/internal/output"
)

// lineCase is one CRD in the cluster and in the chart: the chart's text and the live object's.
type lineCase struct {
	name        string
	chart, live string
}

// syntheticCRD is a flat CRD schema of about lines YAML lines: properties of one shape
// (description, type), the live side with every other property's type and description
// changed, as a generated provider CRD edited by hand would be.
func syntheticCRD(lines int) lineCase {
	var chart, live strings.Builder
	head := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n"
	chart.WriteString(head)
	live.WriteString(head)
	for i := 0; i < lines/3; i++ {
		fmt.Fprintf(&chart, "          field%d:\n            description: the field\n            type: string\n", i)
		if i%2 == 0 {
			fmt.Fprintf(&live, "          field%d:\n            description: the field, as edited\n            type: integer\n", i)
		} else {
			fmt.Fprintf(&live, "          field%d:\n            description: the field\n            type: string\n", i)
		}
	}
	return lineCase{fmt.Sprintf("synthetic %d lines", lines), chart.String(), live.String()}
}

// rewordedCRD is a CRD of the corpus, the live side with every tenth description reworded.
func rewordedCRD(t *testing.T, path string) lineCase {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%v (../shared/corpus is beside the clone in CI)", err)
	}
	// A chart's templated CRD (kyverno's) holds a few template lines around its labels and
	// annotations: they are left out.
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, "{{") {
			kept = append(kept, l)
		}
	}
	text := strings.TrimPrefix(strings.Join(kept, "\n"), "---\n")
	lines := strings.Split(text, "\n")
	n := 0
	for i, l := range lines {
		if _, v, ok := strings.Cut(l, "description: "); ok && v != "" && (v[0] >= 'A' && v[0] <= 'Z' || v[0] >= 'a' && v[0] <= 'z') {
			if n%10 == 0 {
				lines[i] = strings.Replace(l, "description: ", "description: (edited) ", 1)
			}
			n++
		}
	}
	return lineCase{filepath.Base(path), text, strings.Join(lines, "\n")}
}

// measure runs diff.Run on c as the CLI does for a format: keeping each object's two sides
// for the line views; it returns the report and the seconds it took.
func measure(t *testing.T, c lineCase, views bool) (*diff.Report, float64) {
	cl := &difftest.Cluster{Objects: difftest.Objects(t, c.live)}
	start := time.Now()
	rep, err := diff.Run(context.Background(), cl, diff.Input{Release: "bench", Namespace: "default", Revision: 1,
		Desired: c.chart, Previous: c.chart, Options: diff.Options{Normalize: diff.Offline, Workers: 2, Views: views}})
	if err != nil {
		t.Fatal(err)
	}
	return rep, time.Since(start).Seconds()
}

// measureView measures c's report and times -o diff and -o json of it, and GNU diff -u of the
// two YAML files; it returns the seconds and the bytes allocated by each print, and the
// seconds of each format end to end (the measurement as the CLI makes it for the format, and
// the print).
func measureView(t *testing.T, c lineCase) (diffS, jsonS, gnuS float64, diffB, jsonB uint64, lines int, diffAll, jsonAll float64) {
	rep, runViews := measure(t, c, true)
	plain, runPlain := measure(t, c, false)
	run := func(rep *diff.Report, format string) (float64, uint64, int) {
		var b bytes.Buffer
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := output.WriteReport(&b, rep, format, output.Options{Context: 3}); err != nil {
			t.Fatal(err)
		}
		s := time.Since(start).Seconds()
		runtime.ReadMemStats(&after)
		return s, after.TotalAlloc - before.TotalAlloc, strings.Count(b.String(), "\n")
	}
	diffS, diffB, lines = run(rep, "diff")
	jsonS, jsonB, _ = run(plain, "json")
	diffAll, jsonAll = runViews+diffS, runPlain+jsonS
	dir := t.TempDir()
	live, chart := filepath.Join(dir, "live.yaml"), filepath.Join(dir, "chart.yaml")
	for path, text := range map[string]string{live: c.live, chart: c.chart} {
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(text), &obj); err != nil {
			t.Fatal(err)
		}
		b, _ := sigsyaml.Marshal(obj)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_ = exec.Command("diff", "-u", live, chart).Run() // exit 1: they differ
	gnuS = time.Since(start).Seconds()
	return diffS, jsonS, gnuS, diffB, jsonB, lines, diffAll, jsonAll
}

// TestLineViewCompare prints, with -compare (make bench), -o diff against -o json of the same
// report and against GNU diff -u of the same two YAML files, on CRDs of the corpus with
// descriptions reworded in the cluster and on synthetic flat schemas of 1,500 to 24,000 lines
// with half their properties changed, and how -o diff grows when the lines double.
func TestLineViewCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	corpus := filepath.Join(golden.RepoRoot(), "..", "shared", "corpus")
	cases := []lineCase{
		rewordedCRD(t, filepath.Join(corpus, "traefik", "crds", "traefik.io_traefikservices.yaml")),
		rewordedCRD(t, filepath.Join(corpus, "kyverno", "charts", "crds", "templates", "kyverno.io", "kyverno.io_clusterpolicies.yaml")),
	}
	for _, n := range []int{1500, 3000, 6000, 12000, 24000} {
		cases = append(cases, syntheticCRD(n))
	}
	fmt.Printf("%-34s %10s %10s %8s %10s %8s %12s %12s %22s\n", "case", "-o diff", "-o json", "ratio", "diff -u", "ratio", "diff alloc", "json alloc", "end to end: diff/json")
	prev := 0.0
	for _, c := range cases {
		// The fastest of at least three runs, and of as many as fit in two seconds (up to
		// ten): the least disturbed by whatever else the machine does; a case of a few
		// milliseconds is otherwise mostly noise.
		start := time.Now()
		d, j, g, db, jb, lines, dAll, jAll := measureView(t, c)
		for n := 1; n < 3 || n < 10 && time.Since(start) < 2*time.Second; n++ {
			d2, j2, g2, _, _, _, dAll2, jAll2 := measureView(t, c)
			d, j, g, dAll, jAll = min(d, d2), min(j, j2), min(g, g2), min(dAll, dAll2), min(jAll, jAll2)
		}
		growth := ""
		if strings.HasPrefix(c.name, "synthetic") && prev > 0 {
			growth = fmt.Sprintf("  x%.2f on doubling", d/prev)
		}
		if strings.HasPrefix(c.name, "synthetic") {
			prev = d
		}
		fmt.Printf("%-34s %9.3fs %9.3fs %7.2fx %9.3fs %7.2fx %10.1fMiB %10.1fMiB %7.3fs/%.3fs %5.2fx  (%d lines)%s\n",
			c.name, d, j, d/j, g, d/g, float64(db)/(1<<20), float64(jb)/(1<<20), dAll, jAll, dAll/jAll, lines, growth)
	}
}
