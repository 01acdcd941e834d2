package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// reportingController names helm-drift in the events it posts.
const reportingController = "helm-drift"

// helmReleaseGroup is the HelmRelease's API group.
const helmReleaseGroup = "helm.toolkit.fluxcd.io"

// Flux posts a HelmRelease's events to Flux's notification-controller, as Flux's own
// controllers post theirs (the event API's JSON, involvedObject the HelmRelease), so the
// Alerts and Providers a team runs carry them. A Helm release Flux does not manage has no
// HelmRelease to name: those go to the other sinks only.
// xref: fluxcd/pkg/runtime/events Recorder.AnnotatedEventf; fluxcd/pkg/apis/event v1beta1.
type Flux struct {
	// URL is the notification-controller's event receiver
	// (http://notification-controller.flux-system.svc.cluster.local./).
	URL  string
	HTTP *http.Client
}

// Name implements Sink.
func (f *Flux) Name() string { return "flux" }

// Send implements Sink.
func (f *Flux) Send(ctx context.Context, e Event) error {
	if e.Kind != "helmrelease" {
		return nil
	}
	severity := eventv1.EventSeverityError
	if e.Reason == DriftResolved {
		severity = eventv1.EventSeverityInfo
	}
	ev := eventv1.Event{
		InvolvedObject: corev1.ObjectReference{APIVersion: helmReleaseGroup + "/v2", Kind: "HelmRelease", Namespace: e.Namespace, Name: e.Name},
		Severity:       severity, Timestamp: metav1.Now(), Message: e.Message, Reason: e.Reason,
		ReportingController: reportingController, ReportingInstance: hostname(),
	}
	if e.Link != "" {
		// notification-controller keeps only the metadata keys prefixed with the involved
		// object's group, and hands them on without it: the Provider sees "console".
		ev.Metadata = map[string]string{helmReleaseGroup + "/console": e.Link}
	}
	return postJSON(ctx, f.HTTP, f.URL, ev)
}

// Webhook posts every event as JSON to a URL (a team's own receiver, a chat bridge).
type Webhook struct {
	URL  string
	HTTP *http.Client
}

// Name implements Sink.
func (w *Webhook) Name() string { return "webhook" }

// webhookBody is the generic webhook's JSON.
type webhookBody struct {
	Reason      string              `json:"reason"`
	Kind        string              `json:"kind"`
	Namespace   string              `json:"namespace"`
	Name        string              `json:"name"`
	Message     string              `json:"message"`
	Console     string              `json:"console,omitempty"`
	Divergences []webhookDivergence `json:"divergences"`
}

type webhookDivergence struct {
	Object  string    `json:"object"`
	Path    string    `json:"path"`
	Class   string    `json:"class"`
	Since   time.Time `json:"since"`
	MovedBy []string  `json:"movedBy,omitempty"`
	Returns int       `json:"returns"`
}

// Send implements Sink.
func (w *Webhook) Send(ctx context.Context, e Event) error {
	b := webhookBody{Reason: e.Reason, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, Message: e.Message, Console: e.Link, Divergences: []webhookDivergence{}}
	for _, d := range e.Divergences {
		b.Divergences = append(b.Divergences, webhookDivergence{Object: d.Object, Path: d.Path, Class: string(d.Class), Since: d.FirstSeen, MovedBy: d.Managers, Returns: d.Returns})
	}
	return postJSON(ctx, w.HTTP, w.URL, b)
}

// Events records each event as a Kubernetes Event (events.k8s.io/v1): on the HelmRelease, or
// on the release's namespace for a Helm release.
type Events struct {
	Client kubernetes.Interface
}

// Name implements Sink.
func (k *Events) Name() string { return "events" }

// Send implements Sink.
func (k *Events) Send(ctx context.Context, e Event) error {
	// A Helm release is no object: its namespace stands for it, and the Event is kept there,
	// beside the release's objects (the API server wants an Event about a cluster-scoped
	// object in default otherwise).
	regarding := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: e.Namespace, Namespace: e.Namespace}
	if e.Kind == "helmrelease" {
		regarding = corev1.ObjectReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Namespace: e.Namespace, Name: e.Name}
	}
	typ := corev1.EventTypeWarning
	if e.Reason == DriftResolved {
		typ = corev1.EventTypeNormal
	}
	note := e.Message
	if len(note) > 1000 {
		note = note[:997] + "..."
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: "helm-drift-", Namespace: e.Namespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: "helm-drift.io/serve", ReportingInstance: "helm-drift.io/serve-" + hostname(),
		Action: "Measure", Reason: e.Reason, Regarding: regarding, Note: note, Type: typ,
	}
	_, err := k.Client.EventsV1().Events(e.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// postJSON posts v as JSON and wants a 2xx answer.
func postJSON(ctx context.Context, client *http.Client, url string, v any) error {
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
