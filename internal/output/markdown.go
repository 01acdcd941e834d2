package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/helm-drift/helm-drift/internal/diff"
)

func init() {
	register(Format{Name: "markdown", Rank: 3,
		Report: func(w io.Writer, rep *diff.Report, _ Options) error { writeMarkdown(w, rep); return nil },
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, _ Options) error {
			return writeSummaryTable(w, rows, clusters, "markdown")
		}})
}

func writeMarkdown(w io.Writer, r *diff.Report) {
	fmt.Fprintf(w, "### %s/%s revision %d\n\n", r.Namespace, r.Release, r.Revision)
	if r.WillFail > 0 {
		fmt.Fprintf(w, "**This upgrade will fail**: the API server refuses %d objects.\n\n", r.WillFail)
	}
	rows := 0
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if rows == 0 && r.Rendered {
				fmt.Fprintln(w, "| Object | Class | Field | Chart | Cluster | Moved | Upgrade |\n|---|---|---|---|---|---|---|")
			} else if rows == 0 {
				fmt.Fprintln(w, "| Object | Class | Field | Chart | Cluster | Upgrade |\n|---|---|---|---|---|---|")
			}
			rows++
			field, chart, cluster, upgrade := cells(d)
			fmt.Fprintf(w, "| %s | %s | `%s` | %s | %s | %s%s |\n", mdCell(o.Object), d.Class, strings.ReplaceAll(field, "`", "'"), mdCell(chart), mdCell(cluster), movedCell(r, d, " | "), mdCell(upgrade))
		}
	}
	if rows > 0 {
		fmt.Fprintln(w)
	}
	for _, p := range r.Prune {
		fmt.Fprintf(w, "- to prune: %s%s\n", mdCell(p.Object), mdCell(pruneNote(p)))
	}
	for _, o := range r.Objects {
		if o.Refusal != nil {
			fmt.Fprintf(w, "- will fail: %s: %s\n", mdCell(o.Object), mdCell(refusalText(o.Refusal)))
		}
		if o.Error != "" {
			fmt.Fprintf(w, "- could not measure: %s: %s\n", mdCell(o.Object), mdCell(o.Error))
		}
	}
	if l := r.Lookup; l != nil && !l.Impersonated {
		fmt.Fprintf(w, "- note: %s\n", mdCell(lookupText(l)))
	}
	if len(r.Prune) > 0 || r.Unmeasured > 0 || r.WillFail > 0 || (r.Lookup != nil && !r.Lookup.Impersonated) {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s\n\n", mdCell(summary(r)))
	if f := footer(r.Stamp); f != "" {
		fmt.Fprintf(w, "_%s_\n\n", mdCell(f))
	}
}

// mdCell escapes a table cell of Markdown, on one line.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(firstLine(s))
}
