package varying

import (
	"path"
	"slices"
	"strings"

	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// The second render of an upgrade finds the fields that differ between two renders of the
// same inputs. Only the templates that can render differently need that second render (see
// Analyze): the twin is given those, and what they include, and its manifest is the first
// render's with those templates' documents replaced (Splice). This file reads the charts of
// both Helm SDKs for it.

// treeChart is a chart of either Helm SDK, as chartTree walks it.
type treeChart[C any] interface {
	Dependencies() []C
	ChartFullPath() string
}

// chartTree is what the analysis reads of a chart and its dependencies: the templates, named
// as the engine names them (the chart's full path and the file's), and the texts tpl may be
// given (the values' strings, the files). own reads one chart of either SDK: its templates
// (named within it), its values and its files.
func chartTree[C treeChart[C]](ch C, own func(C) (templates []Template, values map[string]any, files [][]byte)) ([]Template, []string) {
	var templates []Template
	var texts []string
	var walk func(c C)
	walk = func(c C) {
		for _, d := range c.Dependencies() {
			walk(d)
		}
		ts, values, files := own(c)
		for _, t := range ts {
			templates = append(templates, Template{Name: path.Join(c.ChartFullPath(), t.Name), Data: t.Data})
		}
		texts = appendStrings(texts, values)
		for _, f := range files {
			texts = append(texts, string(f))
		}
	}
	walk(ch)
	return templates, texts
}

// ChartTree3 is chartTree for a Helm 3 chart.
func ChartTree3(ch *chart3.Chart) ([]Template, []string) {
	return chartTree(ch, func(c *chart3.Chart) (templates []Template, values map[string]any, files [][]byte) {
		for _, t := range c.Templates {
			if t != nil {
				templates = append(templates, Template{Name: t.Name, Data: t.Data})
			}
		}
		for _, f := range c.Files {
			if f != nil {
				files = append(files, f.Data)
			}
		}
		return templates, c.Values, files
	})
}

// Keep3 leaves in ch and its dependencies only the templates in keep.
func Keep3(ch *chart3.Chart, keep map[string]bool) {
	for _, d := range ch.Dependencies() {
		Keep3(d, keep)
	}
	ch.Templates = slices.DeleteFunc(ch.Templates, func(t *chart3.File) bool {
		return t == nil || !keep[path.Join(ch.ChartFullPath(), t.Name)]
	})
}

// ChartTree4 is chartTree for a Helm 4 chart of chart API v2.
func ChartTree4(ch *chartv2.Chart) ([]Template, []string) {
	return chartTree(ch, func(c *chartv2.Chart) (templates []Template, values map[string]any, files [][]byte) {
		for _, t := range c.Templates {
			if t != nil {
				templates = append(templates, Template{Name: t.Name, Data: t.Data})
			}
		}
		for _, f := range c.Files {
			if f != nil {
				files = append(files, f.Data)
			}
		}
		return templates, c.Values, files
	})
}

// AnalyzeChart reads a chart's templates with the texts tpl may be given: the chart's own (see
// ChartTree3), and the strings of the values given to the render and of the release's last.
func AnalyzeChart(templates []Template, texts []string, values ...map[string]any) Analysis {
	for _, v := range values {
		texts = appendStrings(texts, v)
	}
	return Analyze(templates, texts)
}

// Cut4 is a copy of ch and its dependencies that holds only the templates in keep (the rest
// of each chart is shared with ch).
func Cut4(ch *chartv2.Chart, keep map[string]bool) *chartv2.Chart {
	c := *ch
	var deps []*chartv2.Chart
	for _, d := range ch.Dependencies() {
		deps = append(deps, Cut4(d, keep))
	}
	c.SetDependencies(deps...)
	c.Templates = slices.DeleteFunc(slices.Clone(ch.Templates), func(t *common.File) bool {
		return t == nil || !keep[path.Join(c.ChartFullPath(), t.Name)]
	})
	return &c
}

// Rerender4 is the second render of a chart that render (helm-controller's: the Helm 4 SDK's,
// its post-renderers included) rendered as first: only the templates that can render
// differently, their documents spliced into first; every template when the analysis cannot
// tell, or when the cut chart does not render. helm-controller's post-renderers (kustomize
// patches and images, common metadata) change each object by itself, so the documents of a
// cut chart come out as the whole chart's do; a patch whose target the cut chart lacks fails
// its render, and the whole chart renders again. (diff upgrade's --post-renderer, any
// program given the whole manifest, always renders the whole chart.)
func Rerender4(ch *chartv2.Chart, first string, render func(*chartv2.Chart) (string, error), values ...map[string]any) (string, error) {
	templates, texts := ChartTree4(ch)
	a := AnalyzeChart(templates, texts, values...)
	if a.All {
		return render(ch)
	}
	if len(a.Rerender) == 0 {
		return first, nil
	}
	if second, err := render(Cut4(ch, a.Keep)); err == nil {
		return Splice(first, second, a.Rerender), nil
	}
	return render(ch)
}

// appendStrings appends every string in v (values: maps, lists, scalars) that may be a
// template.
func appendStrings(texts []string, v any) []string {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "{{") {
			texts = append(texts, v)
		}
	case map[string]any:
		for _, x := range v {
			texts = appendStrings(texts, x)
		}
	case []any:
		for _, x := range v {
			texts = appendStrings(texts, x)
		}
	}
	return texts
}

// Splice returns the manifest first with the documents of the templates in again replaced by
// second's: the k-th document of such a template in first by its k-th in second (a template
// may render a different number of them: the extra ones are added at the end, the missing
// ones dropped). Helm writes each document as "---\n# Source: TEMPLATE\n...".
func Splice(first, second string, again map[string]string) string {
	fresh := map[string][]string{}
	var order []string
	for _, d := range manifestDocs(second) {
		if _, ok := again[d.source]; ok {
			if fresh[d.source] == nil {
				order = append(order, d.source)
			}
			fresh[d.source] = append(fresh[d.source], d.text)
		}
	}
	var b strings.Builder
	b.Grow(len(first))
	for _, d := range manifestDocs(first) {
		if _, ok := again[d.source]; !ok {
			b.WriteString(d.text)
			continue
		}
		if q := fresh[d.source]; len(q) > 0 {
			b.WriteString(q[0])
			fresh[d.source] = q[1:]
		}
	}
	for _, src := range order {
		for _, text := range fresh[src] {
			b.WriteString(text)
		}
	}
	return b.String()
}

// manifestDoc is one document of a release manifest, its separator and Source line included.
type manifestDoc struct {
	source, text string
}

// manifestDocs splits a release manifest at its documents' "---\n# Source: " lines. Text
// before the first is a document of no source.
func manifestDocs(m string) []manifestDoc {
	const sep = "---\n# Source: "
	var docs []manifestDoc
	start := 0
	for start < len(m) {
		end := len(m)
		if i := strings.Index(m[start+1:], "\n"+sep); i >= 0 {
			end = start + 1 + i + 1
		}
		text := m[start:end]
		source := ""
		if rest, ok := strings.CutPrefix(text, sep); ok {
			source, _, _ = strings.Cut(rest, "\n")
		}
		docs = append(docs, manifestDoc{source, text})
		start = end
	}
	return docs
}
