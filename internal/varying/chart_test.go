package varying

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestSteadyCorpus holds the analysis to the public charts of the corpus, rendered twice by
// Helm's own engine: every template whose two renders differ is one it renders again, and a
// chart cut down to what it keeps renders those templates.
func TestSteadyCorpus(t *testing.T) {
	dir, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Skipf("corpus: %s not found (it sits beside the checkout in CI)", dir)
	}
	for _, c := range charts {
		t.Run(c.Path, func(t *testing.T) {
			path := filepath.Join(dir, c.Path)
			vals := c.Values(t)
			ch := load(t, path)
			templates, texts := ChartTree3(ch)
			a := AnalyzeChart(templates, texts, vals)
			first, second := render(t, load(t, path), vals), render(t, load(t, path), vals)
			for name, out := range first {
				if out != second[name] && !a.All && a.Rerender[name] == "" {
					t.Errorf("%s renders differently twice, and the analysis would not render it again", name)
				}
			}
			if a.All {
				t.Logf("%d templates, all rendered again: %s", len(templates), a.Why)
				return
			}
			cut := load(t, path)
			Keep3(cut, a.Keep)
			again := render(t, cut, vals)
			for name := range a.Rerender {
				if _, ok := first[name]; ok {
					if _, ok := again[name]; !ok {
						t.Errorf("%s: not rendered by the chart cut down to %v", name, slices.Sorted(maps.Keys(a.Keep)))
					}
				}
			}
			t.Logf("%d templates: %d rendered again (%s), %d kept", len(templates), len(a.Rerender), reasons(a.Rerender), len(a.Keep))
		})
	}
}

func load(t *testing.T, path string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render renders ch as helm template does (no cluster: lookup answers nothing).
func render(t *testing.T, ch *chart.Chart, vals map[string]any) map[string]string {
	t.Helper()
	v := copyValues(vals)
	if err := chartutil.ProcessDependenciesWithMerge(ch, v); err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, v, chartutil.ReleaseOptions{Name: "r", Namespace: "ns", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func reasons(r map[string]string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r)) {
		out = append(out, fmt.Sprintf("%s: %s", filepath.Base(name), r[name]))
	}
	return strings.Join(out, ", ")
}

// TestSplice: the second render's documents replace the first's for the templates rendered
// again, k-th for k-th, in the first's order; a template's extra documents are added at the
// end, its missing ones dropped; the others stay the first's, byte for byte.
func TestSplice(t *testing.T) {
	doc := func(src, body string) string { return "---\n# Source: " + src + "\n" + body + "\n" }
	first := doc("c/templates/a.yaml", "a: 1") + doc("c/templates/s.yaml", "s: 1") + doc("c/templates/b.yaml", "b: 1") +
		doc("c/templates/s.yaml", "s: 2") + doc("c/templates/t.yaml", "t: 1") + doc("c/templates/t.yaml", "t: 2")
	second := doc("c/templates/s.yaml", "s: X") + doc("c/templates/t.yaml", "t: X") + doc("c/templates/s.yaml", "s: Y") +
		doc("c/templates/s.yaml", "s: Z")
	again := map[string]string{"c/templates/s.yaml": "randAlphaNum", "c/templates/t.yaml": "uuidv4"}
	want := doc("c/templates/a.yaml", "a: 1") + doc("c/templates/s.yaml", "s: X") + doc("c/templates/b.yaml", "b: 1") +
		doc("c/templates/s.yaml", "s: Y") + doc("c/templates/t.yaml", "t: X") + doc("c/templates/s.yaml", "s: Z")
	if got := Splice(first, second, again); got != want {
		t.Errorf("splice:\n%s\nwant:\n%s", got, want)
	}
	if got := Splice(first, first, again); got != first {
		t.Errorf("the same render spliced in: not the first byte for byte:\n%s", got)
	}
	if got := manifestDocs("x: 1\n" + doc("c/templates/a.yaml", "a: 1")); len(got) != 2 || got[0].source != "" || got[1].source != "c/templates/a.yaml" {
		t.Errorf("a manifest with text before its first Source: %+v", got)
	}
}

// TestCut4: the cut copy of a chart and its dependency holds only the templates kept, under
// the names the engine gives them; the chart it was cut from is untouched.
func TestCut4(t *testing.T) {
	file := func(name string) *common.File { return &common.File{Name: name, Data: []byte("x: 1")} }
	sub := &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "sub"}, Templates: []*common.File{file("templates/a.yaml"), file("templates/_h.tpl")}}
	top := &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "top"}, Templates: []*common.File{file("templates/b.yaml"), file("templates/c.yaml")}}
	top.SetDependencies(sub)
	cut := Cut4(top, map[string]bool{"top/templates/c.yaml": true, "top/charts/sub/templates/_h.tpl": true})
	names := func(c *chartv2.Chart) []string {
		templates, _ := ChartTree4(c)
		var out []string
		for _, t := range templates {
			out = append(out, t.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(cut), []string{"top/charts/sub/templates/_h.tpl", "top/templates/c.yaml"}; !slices.Equal(got, want) {
		t.Errorf("cut: %v, want %v", got, want)
	}
	if got := names(top); len(got) != 4 || top.Dependencies()[0].Parent() != top || len(sub.Templates) != 2 {
		t.Errorf("the chart cut from changed: %v", got)
	}
}

// copyValues copies a values tree of maps and lists: the engine changes the map it is given.
func copyValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			out[k] = copyValues(v)
		case []any:
			out[k] = slices.Clone(v)
		default:
			out[k] = v
		}
	}
	return out
}
