package output

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/linediff"
)

// Options shape the unified diff.
type Options struct {
	// Context is the number of unchanged lines around each change; below zero, the whole
	// object.
	Context int
	// Colour writes ANSI colours: removed lines red, added green, hunk headers cyan, the
	// annotations yellow.
	Colour bool
	// Comments is how many comments -o github and gitlab may split into (0 and 1: one).
	Comments int
	// Problems and Notes are said of the whole run, before its releases, by the formats a
	// reader sees alone (-o github, gitlab): what could not be read or rendered (diff tree's
	// Kustomizations that did not build), and what was not compared or deserves a look.
	Problems, Notes []string
}

// ANSI colours of the unified diff.
const (
	red, green, cyan, yellow, bold, reset = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
)

// WriteDiff prints each report as a unified diff per object that has rows: the live side
// as "---", the chart's as "+++" (what the upgrade, or helm-controller's correction, would make of
// it), each hunk led by the verdicts of the rows it shows; then the report's notes and summary
// line. A run over many releases (the rows keep their reports when the run kept views) is one
// block per release; the footer, when and against what it was measured, comes once at the end.
func WriteDiff(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, opt Options) error {
	for i, row := range rows {
		if err := WriteDiffBlock(w, row, i == 0, len(clusters) > 1, opt); err != nil {
			return err
		}
	}
	WriteDiffEnd(w, clusters, opt)
	return nil
}

// WriteDiffBlock prints one release of a run over many as WriteDiff does (first: the run's
// first block; contexts: the run measures several clusters), so that a run can print each
// release as soon as it is measured and let its report go.
func WriteDiffBlock(w io.Writer, row diff.SummaryRow, first, contexts bool, opt Options) error {
	if !first {
		fmt.Fprintln(w)
	}
	if row.Report == nil {
		name := row.Namespace + "/" + row.Release
		if row.HelmRelease != "" {
			name = "HelmRelease " + row.HelmRelease
		}
		fmt.Fprintln(w, paint(opt, yellow, "# "+prefix(row.Context)+name+": could not measure: "+oneLine(row.Error)))
		return nil
	}
	if contexts {
		fmt.Fprintln(w, paint(opt, bold, "# context "+row.Context))
	}
	r := *row.Report
	r.Stamp = diff.Stamp{} // the run's footer says it once
	return writeReport(w, &r, opt)
}

// WriteDiffEnd prints what ends WriteDiff's output: the clusters that could not be measured,
// and when and against what the run measured.
func WriteDiffEnd(w io.Writer, clusters []diff.ClusterRun, opt Options) {
	for _, c := range clusters {
		if c.Error != "" {
			fmt.Fprintln(w, paint(opt, yellow, "# context "+c.Context+": could not measure the cluster: "+oneLine(c.Error)))
		}
	}
	if f := summaryFooter(clusters); f != "" {
		fmt.Fprintln(w, f)
	}
}

func prefix(context string) string {
	if context == "" {
		return ""
	}
	return context + ": "
}

func writeReport(w io.Writer, r *diff.Report, opt Options) error {
	diffs, err := reportDiffs(r, opt.Context)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		d.write(w, opt)
	}
	for _, n := range Notes(r) {
		fmt.Fprintln(w, paint(opt, yellow, "# "+n))
	}
	fmt.Fprintln(w, summary(r))
	if f := footer(r.Stamp); f != "" {
		fmt.Fprintln(w, f)
	}
	return nil
}

// reportDiffs are the diffs of a report's objects that have rows, then of those the upgrade
// prunes (a kept one, or one already gone, by its title alone).
func reportDiffs(r *diff.Report, context int) ([]*unified, error) {
	var out []*unified
	for _, o := range r.Objects {
		if len(o.Rows) == 0 {
			continue
		}
		d, err := objectDiff(r, o, context)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Object, err)
		}
		out = append(out, d)
	}
	for _, p := range r.Prune {
		d := &unified{title: "TO PRUNE " + PruneText(p)}
		if p.View != nil && !p.Keep {
			var err error
			if d, err = sides(d.title, p.View, context); err != nil {
				return nil, fmt.Errorf("%s: %w", p.Object, err)
			}
			if r.Sides[0] != "" {
				d.live = r.Sides[0]
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// unified is one object's diff: its title, the rows placed in no hunk, and the hunks.
type unified struct {
	title       string
	notes       []string
	live, chart string // the two sides' names in the "---" and "+++" lines
	hunks       []hunk
	ranges      [][4]int // each hunk's live lines [0,1) and chart lines [2,3), 0-based
	// liveAt and chartAt give the line at which a field of each side begins (-1: not shown).
	liveAt, chartAt func(ptr string) int
}

type hunk struct {
	header string   // "@@ -3,7 +3,8 @@"
	notes  []string // the rows it shows
	lines  []string // " ", "-" or "+" and the line
}

// Text is the unified diff of one object as plain text, for the pull-request comment and the
// tests.
func (d *unified) Text() string {
	var b strings.Builder
	d.write(&b, Options{})
	return b.String()
}

func (d *unified) write(w io.Writer, opt Options) {
	fmt.Fprintln(w, paint(opt, bold, "# "+d.title))
	for _, n := range d.notes {
		fmt.Fprintln(w, paint(opt, yellow, "# "+n))
	}
	if len(d.hunks) == 0 {
		return
	}
	fmt.Fprintln(w, paint(opt, bold, "--- "+d.live))
	fmt.Fprintln(w, paint(opt, bold, "+++ "+d.chart))
	for _, h := range d.hunks {
		for _, n := range h.notes {
			fmt.Fprintln(w, paint(opt, yellow, "# "+n))
		}
		fmt.Fprintln(w, paint(opt, cyan, h.header))
		for _, l := range h.lines {
			switch l[0] {
			case '-':
				l = paint(opt, red, l)
			case '+':
				l = paint(opt, green, l)
			}
			fmt.Fprintln(w, l)
		}
	}
}

func paint(opt Options, colour, s string) string {
	if !opt.Colour {
		return s
	}
	return colour + s + reset
}

// objectDiff is the diff of one measured object, each row's verdict placed at the hunk that
// shows its field.
func objectDiff(r *diff.Report, o diff.Object, context int) (*unified, error) {
	title := o.Object + ": " + classes(o.Rows)
	if o.Normalize != "" && o.Normalize != "-" {
		title += " (normalize " + o.Normalize + ")"
	}
	if o.View == nil {
		d := &unified{title: title}
		for _, row := range o.Rows {
			d.notes = append(d.notes, Annotation(r, row))
		}
		return d, nil
	}
	d, err := sides(title, o.View, context)
	if err == nil && r.Sides[0] != "" {
		d.live, d.chart = sideName(r.Sides[0], o.View.Live), sideName(r.Sides[1], o.View.Chart)
	}
	if err != nil {
		return nil, err
	}
	for _, row := range o.Rows {
		text := Annotation(r, row)
		at, ok := -1, false
		if ptr, has := o.View.LiveAt[row.Path]; has {
			at, ok = d.liveAt(ptr), true
		}
		h := -1
		if ok && at >= 0 {
			h = d.hunkAt(at, true)
		}
		if h < 0 {
			if ptr, has := o.View.ChartAt[row.Path]; has {
				if at := d.chartAt(ptr); at >= 0 {
					h = d.hunkAt(at, false)
				}
			}
		}
		if h < 0 {
			d.notes = append(d.notes, text)
			continue
		}
		d.hunks[h].notes = append(d.hunks[h].notes, text)
	}
	return d, nil
}

// classes counts an object's rows by class: "DIFFERS 1, CLUSTER-ONLY 2".
func classes(rows []diff.Row) string {
	n := map[compare.Class]int{}
	for _, r := range rows {
		n[r.Class]++
	}
	var parts []string
	for _, c := range []compare.Class{compare.Differs, compare.ChartOnly, compare.ClusterOnly, compare.Shadows} {
		if n[c] > 0 {
			parts = append(parts, string(c)+" "+strconv.Itoa(n[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// sides diffs a view's two sides as YAML.
func sides(title string, v *compare.View, context int) (*unified, error) {
	live, err := printSide(v.Live, v.LiveAt)
	if err != nil {
		return nil, err
	}
	chart, err := printSide(v.Chart, v.ChartAt)
	if err != nil {
		return nil, err
	}
	d := &unified{title: title, live: "live", chart: "chart", liveAt: live.line, chartAt: chart.line}
	if v.Live == nil {
		d.live = "/dev/null"
	}
	if v.Chart == nil {
		d.chart = "/dev/null"
	}
	d.diff(live.lines(), chart.lines(), context)
	return d, nil
}

// sideName is a side's name in the "---" and "+++" lines, /dev/null where it has no object.
func sideName(name string, side map[string]any) string {
	if side == nil {
		return "/dev/null"
	}
	return name
}

// diff makes d's hunks of the two sides' lines.
func (d *unified) diff(live, chart []string, context int) {
	for _, group := range linediff.Group(linediff.Diff(live, chart), context) {
		first, last := group[0], group[len(group)-1]
		h := hunk{header: "@@ -" + unifiedRange(first.I1, last.I2) + " +" + unifiedRange(first.J1, last.J2) + " @@"}
		for _, c := range group {
			if c.Tag == 'e' {
				for _, l := range live[c.I1:c.I2] {
					h.lines = append(h.lines, " "+l)
				}
				continue
			}
			if c.Tag == 'r' || c.Tag == 'd' {
				for _, l := range live[c.I1:c.I2] {
					h.lines = append(h.lines, "-"+l)
				}
			}
			if c.Tag == 'r' || c.Tag == 'i' {
				for _, l := range chart[c.J1:c.J2] {
					h.lines = append(h.lines, "+"+l)
				}
			}
		}
		d.hunks = append(d.hunks, h)
		d.ranges = append(d.ranges, [4]int{first.I1, last.I2, first.J1, last.J2})
	}
}

// unifiedRange is a hunk range as diff -u writes it: "3,7", "3" for one line, "2,0" for none.
func unifiedRange(start, stop int) string {
	beginning, length := start+1, stop-start
	switch length {
	case 1:
		return strconv.Itoa(beginning)
	case 0:
		beginning--
	}
	return strconv.Itoa(beginning) + "," + strconv.Itoa(length)
}

// printSide is one side of a view printed as YAML, with the lines of the fields its rows
// name; nothing for a missing object.
func printSide(obj map[string]any, at map[string]string) (*printedYAML, error) {
	if obj == nil {
		return &printedYAML{at: &field{line: -1}}, nil
	}
	pointers := make([]string, 0, len(at))
	for _, ptr := range at {
		pointers = append(pointers, ptr)
	}
	return printYAML(obj, pointers)
}

// hunkAt returns the hunk showing line at of the live side (live) or the chart's, -1 for none:
// the hunks are in order on both sides, so a binary search finds it.
func (d *unified) hunkAt(at int, live bool) int {
	lo, hi := 2, 3
	if live {
		lo, hi = 0, 1
	}
	i := sort.Search(len(d.ranges), func(i int) bool { return d.ranges[i][hi] > at })
	if i < len(d.ranges) && at >= d.ranges[i][lo] {
		return i
	}
	return -1
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func init() {
	f := func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, o Options) error {
		return WriteDiff(w, rows, clusters, o)
	}
	register(Format{Name: "diff", Rank: 5, Help: "a unified diff per object; HELM_DRIFT_EXTERNAL_DIFF runs a program on two trees instead",
		Report: sideBySide(f), Summary: f, Sides: true})
}
