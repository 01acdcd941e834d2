// Package notify tells people when drift appears and when it is gone, through what they already
// run: Flux's notification-controller (an event on the HelmRelease, carried by their Alerts and
// Providers), Kubernetes Events, a generic webhook, Alertmanager. One DriftDetected when a release's
// divergences appear, one DriftResolved when the last one is gone: never one per run, and a
// divergence that flips back and forth is not a storm. No message carries a value: the history
// it is made from holds none.
package notify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/helm-drift/helm-drift/internal/history"
)

// The reasons of the notifications.
const (
	DriftDetected = "DriftDetected"
	DriftResolved = "DriftResolved"
)

// Event is one notification about one release or HelmRelease.
type Event struct {
	// Kind ("release" or "helmrelease"), Namespace and Name say what drifts.
	Kind, Namespace, Name string
	// Reason is DriftDetected or DriftResolved.
	Reason string
	// Message names the objects, fields, classes and managers, never a value.
	Message string
	// Divergences are those that appeared (DriftDetected) or went (DriftResolved).
	Divergences []history.Entry
	// Link is the release's console page ("" without --external-url).
	Link string
}

// Measured is the key of what the event is about, as the history keys it.
func (e Event) Measured() string { return history.Join(e.Kind, e.Namespace, e.Name) }

// A Sink carries events somewhere.
type Sink interface {
	// Name names it in logs ("flux", "events", "webhook").
	Name() string
	// Send delivers one event.
	Send(ctx context.Context, e Event) error
}

// Notifier decides, from each run's changes, which events to send, and sends them to every
// sink.
type Notifier struct {
	Sinks []Sink
	// ConsoleURL is the console's external address (serve --external-url; "": no link).
	ConsoleURL string

	mu sync.Mutex
	// alerted are the measurements told DriftDetected and not DriftResolved since.
	alerted map[string]bool
	// sent are those whose DriftDetected was sent, here or before a restart (the first run's
	// drift is alerted but not sent): the ones a Resender keeps firing.
	sent map[string]bool
}

// A Resender is a sink that must hear of open drift again after every run, not only when it
// changes (Alertmanager ends an alert that is not re-sent within its resolve timeout).
type Resender interface {
	Sink
	// Resend re-sends the DriftDetected events of the drift still open.
	Resend(ctx context.Context, firing []Event) error
}

// Alerted marks measurements as already told (a restart whose history holds open divergences:
// they were told before it).
func (n *Notifier) Alerted(measured []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ready()
	for _, m := range measured {
		n.alerted[m], n.sent[m] = true, true
	}
}

// ready makes the Notifier's maps (the zero Notifier is ready for use); n.mu is held.
func (n *Notifier) ready() {
	if n.alerted == nil {
		n.alerted, n.sent = map[string]bool{}, map[string]bool{}
	}
}

// Events are the notifications a run's changes call for: per measurement, DriftDetected when
// divergences it never had appeared (one that comes back after a fix is counted as a return,
// not told again); DriftResolved when none is open any more (open: the measurements with open
// divergences after the run) and DriftDetected was told.
func (n *Notifier) Events(changes []history.Change, open map[string]bool) []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ready()
	opened, resolved := map[string][]history.Entry{}, map[string][]history.Entry{}
	for _, c := range changes {
		switch c.What {
		case history.Opened:
			opened[c.Measured] = append(opened[c.Measured], c.Entry)
		case history.Resolved:
			resolved[c.Measured] = append(resolved[c.Measured], c.Entry)
		}
	}
	var out []Event
	for m, es := range opened {
		if !open[m] {
			continue // appeared and went within the run: nothing to tell
		}
		n.alerted[m] = true
		out = append(out, n.event(m, DriftDetected, es))
	}
	for m, es := range resolved {
		if open[m] || !n.alerted[m] {
			continue
		}
		delete(n.alerted, m)
		out = append(out, n.event(m, DriftResolved, es))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Kind+"/"+a.Namespace+"/"+a.Name+"/"+a.Reason < b.Kind+"/"+b.Namespace+"/"+b.Name+"/"+b.Reason
	})
	return out
}

// Send sends each event to each sink; it returns every failure, named.
func (n *Notifier) Send(ctx context.Context, events []Event) error {
	n.mu.Lock()
	n.ready()
	for _, e := range events {
		if e.Reason == DriftDetected {
			n.sent[e.Measured()] = true
		} else {
			delete(n.sent, e.Measured())
		}
	}
	n.mu.Unlock()
	var errs []error
	for _, e := range events {
		for _, s := range n.Sinks {
			if err := s.Send(ctx, e); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %s/%s: %w", s.Name(), e.Reason, e.Namespace, e.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Resend re-sends, to each Resender, the DriftDetected events of the measurements whose drift
// was sent and is still open (open: each one's open divergences after the run).
func (n *Notifier) Resend(ctx context.Context, open map[string][]history.Entry) error {
	var rs []Resender
	for _, s := range n.Sinks {
		if r, ok := s.(Resender); ok {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	n.mu.Lock()
	var firing []Event
	for m, es := range open {
		if n.sent[m] && len(es) > 0 {
			firing = append(firing, n.event(m, DriftDetected, es))
		}
	}
	n.mu.Unlock()
	if len(firing) == 0 {
		return nil
	}
	sort.Slice(firing, func(i, j int) bool {
		a, b := firing[i], firing[j]
		return a.Kind+"/"+a.Namespace+"/"+a.Name < b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	var errs []error
	for _, r := range rs {
		if err := r.Resend(ctx, firing); err != nil {
			errs = append(errs, fmt.Errorf("%s: %d alerts: %w", r.Name(), len(firing), err))
		}
	}
	return errors.Join(errs...)
}

// event writes one event's message.
func (n *Notifier) event(measured, reason string, es []history.Entry) Event {
	kind, ns, name := history.Split(measured)
	e := Event{Kind: kind, Namespace: ns, Name: name, Reason: reason, Divergences: es}
	what := "Helm release " + e.Namespace + "/" + e.Name
	if e.Kind == "helmrelease" {
		what = "HelmRelease " + e.Namespace + "/" + e.Name
	}
	var items []string
	for i, d := range es {
		if i == 10 {
			items = append(items, fmt.Sprintf("and %d more", len(es)-10))
			break
		}
		item := d.Object + " " + d.Path + " (" + string(d.Class)
		if len(d.Managers) > 0 {
			item += ", moved by " + strings.Join(d.Managers, ", ")
		}
		items = append(items, item+")")
	}
	if reason == DriftDetected {
		e.Message = fmt.Sprintf("Drift detected in %s: %d divergence(s) appeared: %s", what, len(es), strings.Join(items, "; "))
	} else {
		e.Message = fmt.Sprintf("Drift resolved in %s: the last divergence(s) went: %s", what, strings.Join(items, "; "))
	}
	if n.ConsoleURL != "" {
		e.Link = strings.TrimSuffix(n.ConsoleURL, "/") + "/" + e.Kind + "/" + e.Namespace + "/" + e.Name
		e.Message += ". " + e.Link
	}
	return e
}
