package output

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

func init() {
	register(Format{Name: "table", Rank: 0,
		Report: func(w io.Writer, rep *diff.Report, o Options) error { writeTable(w, rep, o.Colour); return nil },
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, _ Options) error {
			return writeSummaryTable(w, rows, clusters, "table")
		}})
}

// classColour is the ANSI colour of each class on a terminal.
var classColour = map[compare.Class]string{
	compare.Differs: "33", compare.ChartOnly: "32", compare.ClusterOnly: "31", compare.Shadows: "35",
}

func writeTable(w io.Writer, r *diff.Report, colour bool) {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	header := false
	last := "UPGRADE"
	if r.Next != nil {
		fmt.Fprintf(w, "HelmRelease %s: next reconcile: %s: %s\n", r.HelmRelease, r.Next.Action, r.Next.Reason)
		last = "NEXT RECONCILE"
	}
	for _, c := range r.Causes {
		fmt.Fprintf(w, "cause: %s\n", c)
	}
	if r.WillFail > 0 {
		fmt.Fprintf(w, "this upgrade will fail: the API server refuses %d objects (WILL-FAIL below)\n", r.WillFail)
	}
	moved := ""
	if r.Rendered {
		moved = "MOVED\t"
	}
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if !header {
				fmt.Fprintln(tw, "OBJECT\tCLASS\tFIELD\tCHART\tCLUSTER\t"+moved+last)
				header = true
			}
			field, chart, cluster, upgrade := cells(d)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\n", o.Object, d.Class, field, firstLine(chart), firstLine(cluster), movedCell(r, d, "\t"), upgrade)
		}
	}
	tw.Flush()
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, line := range lines {
		if colour && i > 0 {
			// Coloured after alignment: tabwriter would count the escape codes as width.
			for class, c := range classColour {
				if strings.Contains(line, "  "+string(class)+"  ") {
					line = strings.Replace(line, "  "+string(class)+"  ", "  \x1b["+c+"m"+string(class)+"\x1b[0m  ", 1)
					break
				}
			}
		}
		io.WriteString(w, line)
	}
	for _, p := range r.Prune {
		fmt.Fprintf(w, "TO PRUNE  %s%s\n", p.Object, pruneNote(p))
	}
	for _, o := range r.Objects {
		switch {
		case o.Refused != "":
			fmt.Fprintf(w, "REFUSED  %s: %s\n", o.Object, o.Refused)
		case o.Adopted:
			fmt.Fprintf(w, "ADOPTED  %s: it exists without this release's ownership metadata; --take-ownership takes it over\n", o.Object)
		}
		if o.Refusal != nil {
			fmt.Fprintf(w, "WILL-FAIL  %s: %s\n", o.Object, refusalText(o.Refusal))
		}
	}
	for _, o := range r.Objects {
		if o.Error != "" {
			fmt.Fprintf(w, "COULD NOT MEASURE  %s: %s\n", o.Object, o.Error)
		}
	}
	for _, o := range r.Objects {
		if o.Normalize != string(r.Normalize) && o.Normalize != string(diff.Server) && o.Normalize != string(diff.Offline) && o.Normalize != "-" {
			fmt.Fprintf(w, "note: %s: normalize %s\n", o.Object, o.Normalize)
		}
	}
	if r.Engine != "" {
		fmt.Fprintf(w, "note: rendered with %s\n", r.Engine)
	}
	if r.Source != "" {
		fmt.Fprintf(w, "note: chart from %s\n", r.Source)
	}
	if l := r.Lookup; l != nil {
		fmt.Fprintf(w, "note: %s\n", lookupText(l))
	}
	if n := renderDependent(r); n > 0 {
		fmt.Fprintf(w, "note: %d fields moved with the chart although its chart and values are the stored release's: the chart renders them differently each time or once its objects exist (lookup); nobody changed the cluster there\n", n)
	}
	if r.Unstable > 0 {
		fmt.Fprintf(w, "note: %d unstable fields: two renders of the same inputs disagree on them (random values, timestamps), so every upgrade changes them; %s\n", r.Unstable, unstableCounted(r))
	}
	if r.Defaulting != "" && usedOffline(r) {
		fmt.Fprintf(w, "note: offline normalisation: %s\n", r.Defaulting)
	}
	fmt.Fprintln(w, summary(r))
	if f := footer(r.Stamp); f != "" {
		fmt.Fprintln(w, f)
	}
}
