package serve

// A run remembered: the history read back from and written to the OpenReports Reports, the
// changes logged, the notifications sent.

import (
	"context"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/history"
	"github.com/helm-drift/helm-drift/internal/reportstore"
)

// loadHistory reads the history the Reports hold, once, before the first run is remembered
// (a restarted serve keeps every divergence's first sighting). Without the CRD or the grants
// it warns once and keeps the history in memory.
func (s *Server) loadHistory(ctx context.Context) {
	if s.loaded || s.store == nil {
		return
	}
	entries, err := s.store.Load(ctx)
	if err != nil {
		s.storeFailed(err)
		if s.store != nil {
			return // a passing failure: read again before the next run
		}
	}
	s.loaded = true
	if len(entries) > 0 {
		s.History.Restore(entries)
		s.restored = true
		if s.Notifier != nil {
			// What is open was told before the restart.
			var open []string
			for m := range s.History.Oldest() {
				open = append(open, m)
			}
			s.Notifier.Alerted(open)
		}
		s.Log.Info("history read back from OpenReports Reports", "divergences", len(entries))
	}
}

// notify sends the events a run's changes call for; the first run of a serve with no history
// tells nothing (what exists then is not news) but marks what it found as told.
func (s *Server) notify(ctx context.Context, rec *record, changes []history.Change, first bool) {
	if s.Notifier == nil {
		return
	}
	open := map[string]bool{}
	for m := range rec.oldest {
		open[m] = true
	}
	events := s.Notifier.Events(changes, open)
	if first {
		return
	}
	for _, e := range events {
		s.Log.Info("notified", "reason", e.Reason, "kind", e.Kind, "namespace", e.Namespace, "name", e.Name, "divergences", len(e.Divergences))
	}
	if err := s.Notifier.Send(ctx, events); err != nil {
		s.Log.Error("notifications not delivered", "error", err.Error())
	}
	// The drift still open, re-sent where a sink needs it (what was just told is not).
	told := map[string]bool{}
	for _, e := range events {
		told[e.Measured()] = true
	}
	firing := map[string][]history.Entry{}
	for m := range open {
		if told[m] {
			continue
		}
		for _, e := range s.History.Entries(m) {
			if e.Open() {
				firing[m] = append(firing[m], e)
			}
		}
	}
	if err := s.Notifier.Resend(ctx, firing); err != nil {
		s.Log.Error("firing alerts not re-sent", "error", err.Error())
	}
}

// storeHistory writes the Reports whose history the run changed.
func (s *Server) storeHistory(ctx context.Context, rec *record) {
	if s.store == nil || !s.loaded {
		return
	}
	var measured []string
	for _, row := range rec.rows {
		if row.Error == "" {
			measured = append(measured, identityKey(row))
		}
	}
	n, err := s.store.Sync(ctx, measured, s.History.Entries)
	if err != nil {
		s.storeFailed(err)
	}
	if n > 0 {
		s.Log.Info("OpenReports Reports written", "reports", n)
	}
}

// storeFailed turns the store off, with one warning, when the cluster cannot keep the Reports
// (no CRD, no grant); other errors are logged and the write is tried again next run.
func (s *Server) storeFailed(err error) {
	switch {
	case errors.Is(err, reportstore.ErrNoCRD):
		s.Log.Warn("the history is kept in memory only: "+err.Error(), "fix", "install the CRD (the chart's openreports.installCRD, or Kyverno's), or run with --openreports=false")
	case apierrors.IsForbidden(err):
		s.Log.Warn("the history is kept in memory only: OpenReports Reports may not be written: "+err.Error(), "fix", "grant get, list, create and update on reports.openreports.io (the chart does)")
	default:
		s.Log.Error("OpenReports Reports", "error", err.Error())
		return
	}
	s.store = nil
}

// logChanges logs each divergence a run opened, resolved or saw come back, one line each (the
// first run of a serve with no history: one line for all, what already existed).
func (s *Server) logChanges(changes []history.Change, first bool) {
	if first {
		s.Log.Info("divergences recorded at start", "open", len(changes))
		return
	}
	for _, c := range changes {
		kind, ns, name := history.Split(c.Measured)
		args := []any{"kind", kind, "namespace", ns, "name", name, "object", c.Object, "path", c.Path, "class", string(c.Class),
			"since", c.FirstSeen.Format(time.RFC3339), "returns", c.Returns}
		if len(c.Managers) > 0 {
			args = append(args, "moved_by", strings.Join(c.Managers, ","))
		}
		s.Log.Info("divergence "+c.What, args...)
	}
}
