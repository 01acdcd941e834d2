// Package varying tells which of a chart's templates can render differently twice over the
// same inputs: those that call a function whose result is not a function of its arguments
// (randAlphaNum, uuidv4, now, genCA, lookup, ...), themselves or through the named templates
// and chart files they include and the texts tpl may be given. A second render of the chart to
// find the unstable fields then needs only those templates, the partials, and the files that
// define named templates or that these include by name.
//
// The analysis reads the templates as Helm's engine parses them (text/template) and errs on the
// safe side: a function it does not know varies; a named template included by a computed name,
// or a template that reaches such a function and changes a map that is not its own (set,
// merge, ...: another template may read what it stores there), makes it ask for every template
// to be rendered again.
package varying

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/Masterminds/sprig/v3"
)

// Template is one template file of a chart and its dependencies, named as Helm's engine names
// it: the chart's full path and the file's ("mychart/charts/sub/templates/secret.yaml").
type Template struct {
	Name string
	Data []byte
}

// Analysis is which templates a second render must render again.
type Analysis struct {
	// All: every template must render again; Why says why.
	All bool
	Why string
	// Rerender maps the templates (never partials) whose output may differ between renders
	// to a function that makes it so.
	Rerender map[string]string
	// Keep are the templates a second render of Rerender must be given: Rerender, the
	// partials, every template that defines a named template, and the files any of these
	// include by name.
	Keep map[string]bool
}

// varying are the functions whose result differs from one call to the next over the same
// arguments (random, the clock, a certificate or key generated, a salted hash, the cluster's
// or the DNS's state, a map's iteration order). lookup is among them: the cluster may change
// between two renders, as it does between two installs.
var varying = setOf("randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt",
	"shuffle", "uuidv4", "now", "ago", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "bcrypt", "htpasswd",
	"encryptAES", "getHostByName", "lookup", "keys", "values")

// ordering are the functions over whose argument the order of keys or values does not show:
// keys and values are steady under them.
var ordering = setOf("sortAlpha", "len", "has", "mustHas", "empty")

// storing are the functions that change a map they are given in place: another template may
// read what they store there.
var storing = setOf("set", "unset", "merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite")

// steady are the functions known to return the same result for the same arguments: sprig's
// (but env and expandenv, which Helm removes) and Helm's own, but those in varying; text/template's
// builtins. include and tpl are followed, not trusted.
var steady = func() map[string]bool {
	s := map[string]bool{}
	for name := range sprig.TxtFuncMap() {
		s[name] = true
	}
	delete(s, "env")
	delete(s, "expandenv")
	for _, name := range []string{
		// Helm 3's and Helm 4's own
		"toToml", "mustToToml", "fromToml", "toYaml", "mustToYaml", "toYamlPretty", "fromYaml",
		"fromYamlArray", "toJson", "mustToJson", "fromJson", "fromJsonArray", "required",
		"mustToDuration", "durationSeconds", "durationMilliseconds", "durationMicroseconds",
		"durationNanoseconds", "durationMinutes", "durationHours", "durationDays", "durationWeeks",
		"durationRoundTo", "durationTruncateTo",
		// text/template's builtins
		"and", "or", "not", "len", "index", "slice", "print", "printf", "println", "html", "js",
		"urlquery", "eq", "ne", "lt", "le", "gt", "ge", "call",
	} {
		s[name] = true
	}
	for name := range varying {
		delete(s, name)
	}
	return s
}()

// parseFuncs are the names a template may call, for parsing tpl's texts as Helm parses them
// (the parser asks only that a name have a value).
var parseFuncs = func() map[string]any {
	f := map[string]any{}
	for name := range steady {
		f[name] = true
	}
	for name := range varying {
		f[name] = true
	}
	f["include"], f["tpl"] = true, true
	return f
}()

// node is what one template (a file's body or a named template) does, itself.
type node struct {
	varies   string   // a function that varies, called here ("" none)
	stores   bool     // changes a map that is not its own (set, merge, ...)
	includes []string // named templates it includes (by a constant name)
	tpl      bool     // calls tpl
	computed bool     // includes a template by a computed name
	// files it includes by their name within the chart: $.Template.BasePath and a constant
	// ("/configmap.yaml"), the checksum idiom; the chart is the executing file's, so any
	// chart's file of that name may be the one.
	inChart []string
	texts   []string // string constants that look like templates (tpl may be given them)
}

// Analyze reads templates and tells which of them a second render must render again. texts
// are the strings tpl may be given (the values, the chart's files): those that parse as a
// template are followed as tpl's, the others cannot be (tpl would fail on them).
func Analyze(templates []Template, texts []string) Analysis {
	files := map[string]*node{}
	named := map[string][]*node{} // a name defined in several files: any of them may be the one used
	definers := map[string]bool{}
	for _, t := range templates {
		trees, err := parseTemplate(t.Name, string(t.Data), true)
		if err != nil {
			return everything(fmt.Sprintf("%s does not parse: %v", t.Name, err))
		}
		for name, tree := range trees {
			n := walk(tree)
			if name == t.Name {
				files[name] = n
				continue
			}
			named[name] = append(named[name], n)
			definers[t.Name] = true
		}
		if files[t.Name] == nil {
			files[t.Name] = &node{}
		}
		named[t.Name] = append(named[t.Name], files[t.Name]) // a file is included by its name
	}
	// tpl runs whichever text it is given: the texts, and the templates' own string
	// constants, that parse as Helm's tpl parses them.
	tplNode := &node{}
	queue := slices.Clone(texts)
	for _, ns := range named {
		for _, n := range ns {
			queue = append(queue, n.texts...)
		}
	}
	for _, n := range files {
		queue = append(queue, n.texts...)
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		text := queue[0]
		queue = queue[1:]
		if seen[text] || !strings.Contains(text, "{{") {
			continue
		}
		seen[text] = true
		trees, err := parseTemplate("tpl", text, false)
		if err != nil {
			continue // tpl fails on it: a render that succeeded never gave it to tpl
		}
		for name, tree := range trees {
			n := walk(tree)
			if name != "tpl" {
				named[name] = append(named[name], n)
			}
			merge(tplNode, n)
			queue = append(queue, n.texts...)
		}
	}

	// What each file reaches: through include, template and tpl. A second render runs the
	// files that vary and every other file it is given that is not a partial (one that
	// defines a named template): each must find the files it includes by name.
	g := &graph{files: files, named: named, tpl: tplNode, fileOf: make(map[*node]string, len(files))}
	for name, f := range files {
		g.fileOf[f] = name
	}
	a := Analysis{Rerender: map[string]string{}, Keep: map[string]bool{}}
	runs := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		partial := strings.HasPrefix(path.Base(name), "_")
		if partial || definers[name] {
			a.Keep[name] = true
		}
		if partial {
			continue
		}
		r, reached := g.reach(files[name])
		if r.computed {
			return everything(name + " includes a template by a computed name")
		}
		runs[name] = reached
		if r.varies == "" {
			continue
		}
		if r.stores {
			return everything(fmt.Sprintf("%s calls %s and may store its result where another template reads it", name, r.varies))
		}
		a.Rerender[name], a.Keep[name] = r.varies, true
	}
	for name := range a.Keep {
		for _, f := range runs[name] {
			a.Keep[f] = true
		}
	}
	return a
}

func everything(why string) Analysis { return Analysis{All: true, Why: why} }

// graph is a chart's templates as nodes: the files, the named templates (a name may be
// defined more than once: any of them may be the one used), and what tpl may run.
type graph struct {
	files  map[string]*node
	named  map[string][]*node
	tpl    *node
	fileOf map[*node]string
}

// reach is what n does, with everything it includes, transitively; and the files it
// includes by their name (a second render must keep them).
func (g *graph) reach(n *node) (node, []string) {
	files, named, tplNode, fileOf := g.files, g.named, g.tpl, g.fileOf
	var out node
	var reached []string
	seen := map[*node]bool{}
	var visit func(n *node)
	visit = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if name, ok := fileOf[n]; ok {
			reached = append(reached, name)
		}
		if out.varies == "" {
			out.varies = n.varies
		}
		out.stores = out.stores || n.stores
		out.computed = out.computed || n.computed
		for _, name := range n.includes {
			for _, d := range named[name] {
				visit(d)
			}
		}
		for _, rel := range n.inChart {
			for name, f := range files {
				if strings.HasSuffix(name, "/templates"+rel) {
					visit(f)
				}
			}
		}
		if n.tpl {
			visit(tplNode)
		}
	}
	visit(n)
	return out, reached
}

// merge adds what n does to into: tpl's node gathers every text tpl may run.
func merge(into, n *node) {
	if into.varies == "" {
		into.varies = n.varies
	}
	into.stores = into.stores || n.stores
	into.tpl = into.tpl || n.tpl
	into.computed = into.computed || n.computed
	into.includes = append(into.includes, n.includes...)
	into.inChart = append(into.inChart, n.inChart...)
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
