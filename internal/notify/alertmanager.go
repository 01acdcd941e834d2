package notify

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// AlertName is the alertname of the alerts the Alertmanager sink posts.
const AlertName = "HelmDriftDetected"

// Alertmanager posts drift as alerts to Alertmanager's API (POST /api/v2/alerts), for plain Helm
// releases as for HelmReleases: one alert per release (labels alertname HelmDriftDetected, kind,
// namespace, name), firing from its oldest open divergence on, re-sent after every run while
// the drift lasts (Alertmanager ends an alert that is not re-sent within its resolve timeout),
// and ended at once when the last divergence is gone. Alertmanager groups, deduplicates,
// silences and routes them as it does Prometheus's.
// xref: prometheus/alertmanager api/v2/openapi.yaml, postableAlerts.
type Alertmanager struct {
	// URL is Alertmanager's address (http://alertmanager.monitoring:9093).
	URL  string
	HTTP *http.Client
	// Lasts is how long a firing alert holds without being re-sent: a few of serve's intervals,
	// so that a serve that stops lets it end rather than fire forever.
	Lasts time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// amAlert is Alertmanager's postableAlert.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Name implements Sink.
func (a *Alertmanager) Name() string { return "alertmanager" }

// Send implements Sink: DriftDetected fires the release's alert, DriftResolved ends it.
func (a *Alertmanager) Send(ctx context.Context, e Event) error {
	return a.post(ctx, []Event{e})
}

// Resend implements Resender: the open drift's alerts, firing again.
func (a *Alertmanager) Resend(ctx context.Context, firing []Event) error {
	return a.post(ctx, firing)
}

func (a *Alertmanager) post(ctx context.Context, events []Event) error {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	lasts := a.Lasts
	if lasts <= 0 {
		lasts = time.Hour
	}
	alerts := make([]amAlert, 0, len(events))
	for _, e := range events {
		al := amAlert{
			Labels:       map[string]string{"alertname": AlertName, "kind": e.Kind, "namespace": e.Namespace, "name": e.Name, "severity": "warning"},
			Annotations:  map[string]string{"summary": e.Message},
			GeneratorURL: e.Link,
		}
		for _, d := range e.Divergences {
			if al.StartsAt.IsZero() || d.FirstSeen.Before(al.StartsAt) {
				al.StartsAt = d.FirstSeen
			}
		}
		if e.Reason == DriftResolved {
			// The same labels as the firing alert's: Alertmanager ends that one.
			al.EndsAt = now().UTC()
		} else {
			al.EndsAt = now().Add(lasts).UTC()
		}
		alerts = append(alerts, al)
	}
	return postJSON(ctx, a.HTTP, strings.TrimSuffix(a.URL, "/")+"/api/v2/alerts", alerts)
}
