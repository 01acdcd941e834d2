package serve

import (
	"html/template"
	"sync"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/history"
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
	// oldest is, per "kind/namespace/name", when its oldest open divergence was first seen.
	oldest map[string]time.Time
}

// divergence is one row of a measurement: an object, a field path and a class, and who moved
// the field (the managers other than Helm's owning the live value, the latest one's write).
type divergence struct {
	Object, Path string
	Class        compare.Class
	Managers     []string
	MovedAt      time.Time
}

// identityKey is a measurement's key in a record: "kind/namespace/name".
func identityKey(row diff.SummaryRow) string {
	return history.Join(row.Identity())
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
			dv := divergence{Object: o.Object, Path: d.Path, Class: d.Class, Managers: d.Managers}
			if d.MovedAt != nil {
				dv.MovedAt = *d.MovedAt
			}
			divs = append(divs, dv)
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
		c := output.NewConsoleRow(row, measured, true)
		if row.Since != nil {
			c.Since = row.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		rows = append(rows, c)
	}
	return rows
}

// remember records the run in h (its start: now; its releases measured: each row without an
// error) and gives each row its history: since when its oldest open divergence exists, and
// every divergence's timeline. It returns what the run changed.
func (rec *record) remember(h *history.History, now time.Time) []history.Change {
	measured := map[string]bool{}
	var seen []history.Seen
	for _, row := range rec.rows {
		if row.Error != "" {
			continue
		}
		key := identityKey(row)
		measured[key] = true
		for _, d := range rec.divergences[key] {
			seen = append(seen, history.Seen{Key: history.Key{Measured: key, Object: d.Object, Path: d.Path, Class: d.Class}, Managers: d.Managers, MovedAt: d.MovedAt})
		}
	}
	changes := h.Observe(now, measured, seen)
	oldest := h.Oldest()
	for i := range rec.rows {
		key := identityKey(rec.rows[i])
		if t, ok := oldest[key]; ok {
			rec.rows[i].Since = &t
		}
		rec.rows[i].Timeline = h.Entries(key)
	}
	rec.oldest = oldest
	return changes
}
