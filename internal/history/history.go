// Package history remembers divergences across the runs of helm drift serve: for each one
// (a release or HelmRelease, an object, a field path, a class) when it was first and last seen,
// when it was resolved, how many times it came back, and who moved the field last and when. It
// says what changed from one run to the next (opened, resolved, returned) so that a
// notification is sent per change, never per run. It keeps nothing of a value.
package history

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
)

// Key is one divergence: the measurement it belongs to (Measured: "kind/namespace/name", a
// release or a HelmRelease), the object ("Deployment.apps shop/web"), the field path and the
// class.
type Key struct {
	Measured string        `json:"measured"`
	Object   string        `json:"object"`
	Path     string        `json:"path"`
	Class    compare.Class `json:"class"`
}

// Seen is one divergence as a run saw it: its key and who moved the field (the field managers
// other than Helm's that own the live value, and the time of the latest one's managedFields
// entry; zero when unknown).
type Seen struct {
	Key
	Managers []string
	MovedAt  time.Time
}

// Entry is the history of one divergence.
type Entry struct {
	Key
	// FirstSeen is when it was first seen (the run's start); LastSeen the last run that saw it.
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	// ResolvedAt is when a run first no longer saw it (zero while it is open).
	ResolvedAt time.Time `json:"resolvedAt,omitzero"`
	// Returns counts the times it came back after being resolved.
	Returns int `json:"returns"`
	// Managers and MovedAt: who moved the field, when, as the last run that saw it read it.
	Managers []string  `json:"movedBy,omitempty"`
	MovedAt  time.Time `json:"movedAt,omitzero"`
}

// Join writes a measurement's key, "kind/namespace/name": what Split reads.
func Join(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Split reads a measurement ("kind/namespace/name") as its kind, namespace and name.
func Split(measured string) (kind, namespace, name string) {
	parts := strings.SplitN(measured, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// Open reports whether the divergence is there in the last run that measured its release.
func (e Entry) Open() bool { return e.ResolvedAt.IsZero() }

// What a run changed about a divergence.
const (
	// Opened: seen for the first time.
	Opened = "opened"
	// Resolved: no longer seen.
	Resolved = "resolved"
	// Returned: seen again after it was resolved.
	Returned = "returned"
)

// Change is one divergence whose state a run changed.
type Change struct {
	Entry
	What string
}

// History is every divergence seen, open and resolved. The zero value is ready; it is safe
// for concurrent use.
type History struct {
	mu      sync.Mutex
	entries map[Key]*Entry
	// Retain is how long a resolved divergence is kept (0: 30 days); one that comes back
	// within it is one divergence with a return, not a new one.
	Retain time.Duration
}

// Observe records one run that began at now: seen are the divergences of the measurements it
// measured (measured, by "kind/namespace/name"). A divergence of a measured release that the run
// did not see is resolved; those of releases the run did not measure (it failed, or they are
// gone from its scope) are left as they were. It returns what changed, in a stable order.
func (h *History) Observe(now time.Time, measured map[string]bool, seen []Seen) []Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[Key]*Entry{}
	}
	retain := h.Retain
	if retain == 0 {
		retain = 30 * 24 * time.Hour
	}
	var changes []Change
	now = now.UTC().Truncate(time.Second)
	in := map[Key]bool{}
	for _, s := range seen {
		in[s.Key] = true
		e, ok := h.entries[s.Key]
		what := ""
		switch {
		case !ok:
			e = &Entry{Key: s.Key, FirstSeen: now}
			h.entries[s.Key] = e
			what = Opened
		case !e.Open():
			e.ResolvedAt = time.Time{}
			e.Returns++
			what = Returned
		}
		e.LastSeen, e.Managers = now, s.Managers
		if !s.MovedAt.IsZero() {
			e.MovedAt = s.MovedAt.UTC().Truncate(time.Second)
		}
		if what != "" {
			changes = append(changes, Change{Entry: *e, What: what})
		}
	}
	for k, e := range h.entries {
		switch {
		case in[k] || !measured[k.Measured]:
		case e.Open():
			e.ResolvedAt = now
			changes = append(changes, Change{Entry: *e, What: Resolved})
		case now.Sub(e.ResolvedAt) > retain:
			delete(h.entries, k)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return less(changes[i].Key, changes[j].Key) })
	return changes
}

// Entries are the divergences of a measurement ("kind/namespace/name"; "" for all), open
// ones first, each group by key.
func (h *History) Entries(measured string) []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Entry
	for _, e := range h.entries {
		if measured == "" || e.Measured == measured {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Open() != out[j].Open() {
			return out[i].Open()
		}
		return less(out[i].Key, out[j].Key)
	})
	return out
}

// Oldest is, per measurement, when its oldest open divergence was first seen.
func (h *History) Oldest() map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]time.Time{}
	for _, e := range h.entries {
		if t, ok := out[e.Measured]; e.Open() && (!ok || e.FirstSeen.Before(t)) {
			out[e.Measured] = e.FirstSeen
		}
	}
	return out
}

// Restore puts back entries kept elsewhere (a stored report, after a restart).
func (h *History) Restore(entries []Entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[Key]*Entry{}
	}
	for _, e := range entries {
		e := e
		h.entries[e.Key] = &e
	}
}

func less(a, b Key) bool {
	if a.Measured != b.Measured {
		return a.Measured < b.Measured
	}
	if a.Object != b.Object {
		return a.Object < b.Object
	}
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	return a.Class < b.Class
}
