package output

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// writeSummaryTable prints the rows of a run over many releases as a table (or a Markdown
// table), then when and against what each of clusters was measured. With more than one
// cluster the table has a CONTEXT column, and a cluster that could not be measured at all is
// one row saying why.
func writeSummaryTable(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, format string) error {
	sep, line, end := "\t", "", ""
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	out := io.Writer(tw)
	if format == "markdown" {
		sep, line, end, out = " | ", "| ", " |", w
	}
	hr, multi := false, len(clusters) > 1
	for _, r := range rows {
		hr = hr || r.HelmRelease != ""
	}
	lead := func(r diff.SummaryRow) []string {
		cells := []string{r.Namespace + "/" + r.Release}
		if hr {
			next := r.Next
			if r.WillFail > 0 && next != "" {
				next += " (fails: WILL-FAIL)" // the API server refuses an object of it
			}
			cells = []string{r.HelmRelease, next, r.Namespace + "/" + r.Release}
		}
		if multi {
			cells = append([]string{r.Context}, cells...)
		}
		return cells
	}
	head := []string{"RELEASE"}
	if hr {
		head = []string{"HELMRELEASE", "NEXT RECONCILE", "RELEASE"}
	}
	if multi {
		head = append([]string{"CONTEXT"}, head...)
	}
	fmt.Fprintln(out, line+strings.Join(append(head, "DIVERGENCES/COMPARED", "DIFFERS", "CHART-ONLY", "CLUSTER-ONLY", "SHADOWS", "PENDING DELETIONS"), sep)+end)
	if format == "markdown" {
		fmt.Fprintln(out, "|"+strings.Repeat("---|", len(head)+6))
	}
	cell := func(s string) string {
		if format == "markdown" {
			return mdCell(s)
		}
		return firstLine(s)
	}
	// A row that says why it could not be measured ends with that text: in a table, the last
	// cell of a line is no column, so a long error does not widen the counts' columns.
	last := func(cells []string, text string) string {
		if format == "markdown" {
			return line + strings.Join(append(cells, text, "", "", "", "", ""), sep) + end
		}
		return strings.Join(append(cells, text), sep)
	}
	writeRow := func(r diff.SummaryRow) {
		switch {
		case r.Error != "":
			fmt.Fprintln(out, last(lead(r), "could not measure: "+cell(r.Error)))
		case r.Unmeasured > 0:
			fmt.Fprintln(out, last(lead(r), fmt.Sprintf("could not measure %d objects", r.Unmeasured)))
		default:
			fmt.Fprintln(out, line+strings.Join(append(lead(r), fmt.Sprintf("%d/%d", r.Divergences, r.Compared),
				fmt.Sprint(r.Counts[compare.Differs]), fmt.Sprint(r.Counts[compare.ChartOnly]), fmt.Sprint(r.Counts[compare.ClusterOnly]),
				fmt.Sprint(r.Counts[compare.Shadows]), fmt.Sprint(r.PendingDeletions)), sep)+end)
		}
	}
	if !multi {
		for _, r := range rows {
			writeRow(r)
		}
	} else {
		// Cluster by cluster, in the order asked: its rows, or the row saying why it has none.
		for _, c := range clusters {
			for _, r := range rows {
				if r.Context == c.Context {
					writeRow(r)
				}
			}
			if c.Error != "" {
				cells := make([]string, len(head))
				for i := range cells {
					cells[i] = "-"
				}
				cells[0] = c.Context
				fmt.Fprintln(out, last(cells, "could not measure the cluster: "+cell(c.Error)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := summaryFooter(clusters); f != "" {
		if format == "markdown" {
			f = "\n_" + mdCell(f) + "_"
		}
		fmt.Fprintln(w, f)
	}
	return nil
}
