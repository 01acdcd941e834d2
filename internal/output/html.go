package output

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// The drift console: one page of every release and HelmRelease measured, and one section per
// release with its rows grouped by object and each object's unified diff. The same templates
// make `-o html` (one self-contained file: the table, then every release's section) and the
// pages `serve` serves (the table at /, a release at /release/NS/NAME). The pages are
// server-rendered from html/template, with a little inline script to sort and filter the
// table and to render a diff only when it is opened; no asset is loaded from anywhere.

//go:embed html.tmpl
var consoleTemplates string

var htmlTemplates = template.Must(template.New("html").Parse(consoleTemplates))

// ConsoleRow is one release or HelmRelease in the console's table.
type ConsoleRow struct {
	// Kind is diff.KindRelease or diff.KindHelmRelease.
	Kind                     string
	Context, Namespace, Name string
	// Link is its page: an anchor in a file, a path when served.
	Link string
	// Counts are its rows by class.
	Differs, ChartOnly, ClusterOnly, Shadows int
	// Drift and Changes split them: the cluster moved, or only the chart.
	Drift, Changes   int
	PendingDeletions int
	Unmeasured       int
	WillFail         int
	// Next is a HelmRelease's next reconcile.
	Next string
	// Measured is when (RFC 3339); Since when its oldest open divergence was first seen
	// (serve: "" when none is open).
	Measured, Since string
	// Error says why it could not be measured at all.
	Error string
}

// States are the row's states for the console's filter: drift, changes, pending,
// unmeasured, willfail, failed, clean.
func (r ConsoleRow) States() string {
	var s []string
	if r.Error != "" {
		return "failed"
	}
	if r.Drift > 0 {
		s = append(s, "drift")
	}
	if r.Changes > 0 {
		s = append(s, "changes")
	}
	if r.PendingDeletions > 0 {
		s = append(s, "pending")
	}
	if r.Unmeasured > 0 {
		s = append(s, "unmeasured")
	}
	if r.WillFail > 0 {
		s = append(s, "willfail")
	}
	if len(s) == 0 && r.Differs+r.ChartOnly+r.ClusterOnly+r.Shadows == 0 {
		s = append(s, "clean")
	}
	return strings.Join(s, " ")
}

// Classes are the classes the row has rows of, for the console's filter.
func (r ConsoleRow) Classes() string {
	var s []string
	for _, c := range []struct {
		n    int
		name compare.Class
	}{{r.Differs, compare.Differs}, {r.ChartOnly, compare.ChartOnly}, {r.ClusterOnly, compare.ClusterOnly}, {r.Shadows, compare.Shadows}} {
		if c.n > 0 {
			s = append(s, string(c.name))
		}
	}
	return strings.Join(s, " ")
}

// NewConsoleRow is a summary row as the console shows it; measured is when its cluster was
// measured.
func NewConsoleRow(row diff.SummaryRow, measured string, served bool) ConsoleRow {
	kind, ns, name := row.Identity()
	c := ConsoleRow{Kind: kind, Context: row.Context, Namespace: ns, Name: name, Drift: row.Drift, Changes: row.Changes,
		PendingDeletions: row.PendingDeletions, Unmeasured: row.Unmeasured, WillFail: row.WillFail, Next: row.Next, Measured: measured,
		Differs: row.Counts[compare.Differs], ChartOnly: row.Counts[compare.ChartOnly], ClusterOnly: row.Counts[compare.ClusterOnly],
		Shadows: row.Counts[compare.Shadows], Error: oneLine(row.Error)}
	switch {
	case served:
		c.Link = "/" + kind + "/" + ns + "/" + name
	case row.Report != nil:
		c.Link = "#" + sectionID(row.Context, kind, ns, name)
	}
	return c
}

func sectionID(context, kind, ns, name string) string {
	id := kind + "-" + ns + "-" + name
	if context != "" {
		id = context + "-" + id
	}
	return id
}

// ConsolePage is one page of the console.
type ConsolePage struct {
	// Title heads the page.
	Title string
	// Rows are the table's (none: no table, a release's page).
	Rows []ConsoleRow
	// Contexts: the rows come from several clusters (a column more).
	Contexts bool
	// Sections are the releases' sections (ReleaseSection), in the rows' order.
	Sections []template.HTML
	// Footer says when and against what the run measured.
	Footer string
	// Problems are the clusters that could not be measured.
	Problems []string
	// Served: the page is served (links are paths, a sign-out button); else one file.
	Served bool
	// Back links a release's page to the table.
	Back string
	// Permalink is a release page's address to paste into an issue (serve --external-url).
	Permalink string
	// History: the rows say since when they drift (serve remembers runs): a column more.
	History bool
}

// Totals are the counts above the table.
func (p ConsolePage) Totals() map[string]int {
	t := map[string]int{"releases": len(p.Rows)}
	for _, r := range p.Rows {
		for _, s := range strings.Fields(r.States()) {
			t[s]++
		}
	}
	return t
}

// Footer says when and against what a measurement was made.
func Footer(m diff.Stamp) string { return footer(m) }

// WriteConsole writes one page of the console.
func WriteConsole(w io.Writer, p ConsolePage) error {
	return htmlTemplates.ExecuteTemplate(w, "page", p)
}

// htmlRelease is a release's section.
type htmlRelease struct {
	ID, Title, Summary, Footer string
	Notes                      []string
	Objects                    []htmlObject
	Flux, Argo                 string
}

type htmlObject struct {
	Title, Classes string
	Rows           []htmlRow
	Diff           *htmlDiff
}

type htmlRow struct {
	Class, Field, Chart, Cluster, Moved, Managers, Upgrade string
}

type htmlDiff struct {
	Live, Chart string
	Lines       int
	Hunks       []htmlHunk
}

type htmlHunk struct {
	Header string
	Notes  []string
	Lines  []htmlLine
}

type htmlLine struct {
	Op   string // "del", "add" or "ctx"
	Text string
}

// ReleaseSection renders one release's report as the console's section: its summary and notes,
// its rows grouped by object (each object's unified diff beside them, rendered when opened),
// the objects an upgrade prunes, and the suggested ignore rules in Flux's and Argo CD's syntax
// when the measurement suggested them.
func ReleaseSection(r *diff.Report, context string, opt Options) (template.HTML, error) {
	kind, ns, name := r.Identity()
	title := "Helm release " + ns + "/" + name
	if kind == diff.KindHelmRelease {
		title = "HelmRelease " + ns + "/" + name
	}
	if context != "" {
		title = context + ": " + title
	}
	h := htmlRelease{ID: sectionID(context, kind, ns, name), Title: title, Summary: summary(r), Notes: Notes(r), Footer: footer(r.Stamp)}
	diffs, err := reportDiffs(r, opt.Context)
	if err != nil {
		return "", err
	}
	i := 0
	for _, o := range r.Objects {
		if len(o.Rows) == 0 {
			continue
		}
		obj := htmlObject{Title: o.Object, Classes: classes(o.Rows)}
		if o.Normalize != "" && o.Normalize != "-" {
			obj.Classes += " (normalize " + o.Normalize + ")"
		}
		for _, row := range o.Rows {
			field, chart, cluster, upgrade := cells(row)
			obj.Rows = append(obj.Rows, htmlRow{Class: string(row.Class), Field: field, Chart: chart, Cluster: cluster,
				Moved: string(row.Moved), Managers: strings.Join(row.Managers, ", "), Upgrade: upgrade})
		}
		// The rows placed at no hunk are in the object's table already.
		obj.Diff = diffOf(diffs[i])
		i++
		h.Objects = append(h.Objects, obj)
	}
	for _, p := range r.Prune {
		obj := htmlObject{Title: "TO PRUNE " + PruneText(p)}
		obj.Diff = diffOf(diffs[i])
		i++
		h.Objects = append(h.Objects, obj)
	}
	if a := r.Suggested; a != nil {
		var flux, argo bytes.Buffer
		what := "release " + r.Namespace + "/" + r.Release
		if advise.Write(&flux, a, what, advise.Flux) == nil && advise.Write(&argo, a, what, advise.ArgoCD) == nil {
			h.Flux, h.Argo = flux.String(), argo.String()
		}
	}
	var b bytes.Buffer
	if err := htmlTemplates.ExecuteTemplate(&b, "release", h); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // #nosec: the template escaped every value
}

// diffOf is one object's unified diff as the page shows it (nil: no hunk).
func diffOf(d *unified) *htmlDiff {
	if len(d.hunks) == 0 {
		return nil
	}
	out := &htmlDiff{Live: d.live, Chart: d.chart}
	for _, h := range d.hunks {
		hh := htmlHunk{Header: h.header, Notes: h.notes, Lines: make([]htmlLine, len(h.lines))}
		for i, l := range h.lines {
			op := "ctx"
			switch l[0] {
			case '-':
				op = "del"
			case '+':
				op = "add"
			}
			hh.Lines[i] = htmlLine{Op: op, Text: l}
		}
		out.Lines += len(h.lines)
		out.Hunks = append(out.Hunks, hh)
	}
	return out
}

// consoleOf is the console of a run over many releases: the table, then each release's
// section (the rows keep their reports: the format has Sides).
func consoleOf(rows []diff.SummaryRow, clusters []diff.ClusterRun, opt Options) (ConsolePage, error) {
	measured := map[string]string{}
	contexts := map[string]bool{}
	for _, c := range clusters {
		if !c.CheckedAt.IsZero() {
			measured[c.Context] = c.CheckedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
	}
	p := ConsolePage{Title: "helm-drift: " + strconv.Itoa(len(rows)) + " releases", Footer: summaryFooter(clusters)}
	for _, row := range rows {
		contexts[row.Context] = true
		p.Rows = append(p.Rows, NewConsoleRow(row, measured[row.Context], false))
		if row.Report == nil {
			continue
		}
		r := *row.Report
		r.Stamp = diff.Stamp{}
		s, err := ReleaseSection(&r, row.Context, opt)
		if err != nil {
			return p, err
		}
		p.Sections = append(p.Sections, s)
	}
	p.Contexts = len(contexts) > 1 || len(clusters) > 1
	for _, c := range clusters {
		if c.Error != "" {
			p.Problems = append(p.Problems, "context "+c.Context+": could not measure the cluster: "+oneLine(c.Error))
		}
	}
	for _, pr := range opt.Problems {
		p.Problems = append(p.Problems, "could not read or render: "+oneLine(pr))
	}
	for _, n := range opt.Notes {
		p.Problems = append(p.Problems, "note: "+oneLine(n))
	}
	return p, nil
}

func init() {
	register(Format{Name: "html", Rank: 9, Help: "one self-contained page: the table of releases, each one's rows by object and its unified diffs",
		Report: func(w io.Writer, rep *diff.Report, o Options) error {
			s, err := ReleaseSection(rep, "", o)
			if err != nil {
				return err
			}
			return WriteConsole(w, ConsolePage{Title: "helm-drift: " + strings.SplitN(summary(rep), " (", 2)[0], Sections: []template.HTML{s}, Footer: footer(rep.Stamp)})
		},
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, o Options) error {
			p, err := consoleOf(rows, clusters, o)
			if err != nil {
				return err
			}
			if err := WriteConsole(w, p); err != nil {
				return fmt.Errorf("-o html: %w", err)
			}
			return nil
		},
		Sides: true})
}
