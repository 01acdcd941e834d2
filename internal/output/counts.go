package output

import (
	"fmt"
	"io"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// counts prints no field, key or value: only numbers, for public CI logs. Over many releases it
// is the summary table, which holds only counts.
func init() {
	register(Format{Name: "counts", Rank: 4, Help: "numbers only, for public CI logs",
		Report: func(w io.Writer, rep *diff.Report, _ Options) error { writeCounts(w, rep); return nil },
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, _ Options) error {
			return writeSummaryTable(w, rows, clusters, "table")
		}})
}

func writeCounts(w io.Writer, r *diff.Report) {
	fmt.Fprintf(w, "release %s/%s revision %d: %s (normalize %s)\n", r.Namespace, r.Release, r.Revision, measured(r), r.Normalize)
	for _, c := range []compare.Class{compare.Differs, compare.ChartOnly, compare.ClusterOnly, compare.Shadows} {
		fmt.Fprintf(w, "  %-17s %d\n", c, r.Counts[c])
	}
	fmt.Fprintf(w, "  %-17s %d\n  %-17s %d\n", "pending deletions", r.PendingDeletions, "to prune", len(r.Prune))
	if r.Rendered {
		fmt.Fprintf(w, "  %-17s %d (the cluster moved)\n  %-17s %d (the chart moved: %s brings them)\n", "drift", r.DriftRows, "changes", r.Changes, bringer(r))
	}
	if r.Unstable > 0 {
		fmt.Fprintf(w, "  %-17s %d (%s)\n", "unstable", r.Unstable, unstableCounted(r))
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "  %-17s %d objects (Helm refuses to adopt them)\n", "refused", r.Refused)
	}
	if r.WillFail > 0 {
		fmt.Fprintf(w, "  %-17s %d objects (the API server refuses them: the upgrade fails)\n", "will fail", r.WillFail)
	}
	if r.Unmeasured > 0 {
		fmt.Fprintf(w, "  %-17s %d objects\n", "could not measure", r.Unmeasured)
	}
	if !r.CheckedAt.IsZero() {
		// The time only: a context's name and a server's address are not for public logs.
		fmt.Fprintf(w, "  %-17s %s\n", "measured", r.CheckedAt.Format(time.RFC3339))
	}
}
