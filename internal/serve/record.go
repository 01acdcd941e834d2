package serve

import (
	"html/template"
	"sync"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/output"
)

// record is one successful run, kept once: every measurement's summary row, by identity; the
// divergences of each, by object, field path and class (what the history of a divergence will
// be keyed by); when and against which cluster it was measured; and each measured release's
// console section, rendered once from its report as it was measured (the report and its two
// sides are let go then). The metrics, /report and the console's table are derived from it on
// each request; nothing else holds a copy of the run.
type record struct {
	rows  []diff.SummaryRow
	stamp diff.Stamp
	// divergences are each measurement's rows, by "kind/namespace/name".
	divergences map[string][]divergence
	// sections are the console's, by "kind/namespace/name" (none with --console=false).
	sections map[string]template.HTML
}

// divergence is one row of a measurement: an object, a field path and a class.
type divergence struct {
	Object, Path string
	Class        compare.Class
}

// identityKey is a measurement's key in a record: "kind/namespace/name".
func identityKey(row diff.SummaryRow) string {
	kind, ns, name := row.Identity()
	return kind + "/" + ns + "/" + name
}

// recorder builds a run's record as its releases are measured (Measure.Each).
type recorder struct {
	console bool

	mu       sync.Mutex
	rec      *record
	failed   error
	rendered int
}

func newRecorder(console bool) *recorder {
	return &recorder{console: console, rec: &record{divergences: map[string][]divergence{}, sections: map[string]template.HTML{}}}
}

// add keeps one measured release's divergences and, with the console, renders its section;
// its report is then let go.
func (r *recorder) add(row diff.SummaryRow) {
	if row.Report == nil {
		return
	}
	var divs []divergence
	for _, o := range row.Report.Objects {
		for _, d := range o.Rows {
			divs = append(divs, divergence{Object: o.Object, Path: d.Path, Class: d.Class})
		}
	}
	var section template.HTML
	var err error
	if r.console {
		rep := *row.Report
		rep.Stamp = diff.Stamp{}
		section, err = output.ReleaseSection(&rep, "", output.Options{Context: 3})
	}
	key := identityKey(row)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.divergences[key] = divs
	switch {
	case err != nil:
		r.failed = err
	case r.console:
		r.rec.sections[key] = section
	}
}

// finish is the run's record, with its rows and stamp.
func (r *recorder) finish(rows []diff.SummaryRow, stamp diff.Stamp) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.rows, r.rec.stamp = rows, stamp
	return r.rec
}

// consoleRows are the record's rows as the console's table shows them.
func (rec *record) consoleRows() []output.ConsoleRow {
	measured := rec.stamp.CheckedAt.UTC().Format("2006-01-02T15:04:05Z")
	rows := make([]output.ConsoleRow, 0, len(rec.rows))
	for _, row := range rec.rows {
		rows = append(rows, output.NewConsoleRow(row, measured, true))
	}
	return rows
}
