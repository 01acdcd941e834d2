package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// TestFleet: each context is measured with its own configuration; the rows carry their context
// in the order asked; a cluster whose server is down, and a context the kubeconfig lacks, are
// one ClusterRun each with the reason, and the verb is never run for them.
func TestFleet(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.2"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer up.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: up, cluster: {server: `+up.URL+`}}, {name: down, cluster: {server: `+down.URL+`}}]
contexts: [{name: up, context: {cluster: up, user: u}}, {name: down, context: {cluster: down, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: up
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Contexts(kubeconfig); err != nil || strings.Join(got, ",") != "down,up" {
		t.Fatalf("Contexts = %v, %v; want down,up", got, err)
	}
	at := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	f := Fleet{Options: KubeOptions{Kubeconfig: kubeconfig, Timeout: 5 * time.Second}, Contexts: []string{"down", "up", "missing"}, Now: func() time.Time { return at }}
	var runs atomic.Int64
	s, configs := f.Run(context.Background(), func(ctx context.Context, cfg *Configuration, progress func(done, total int)) (*Summary, error) {
		runs.Add(1)
		if cfg.Context() != "up" || cfg.Server() != up.URL {
			t.Errorf("the verb ran on context %q at %s", cfg.Context(), cfg.Server())
		}
		return &Summary{Rows: []diff.SummaryRow{{Release: "web", Namespace: "apps"}}, Unmeasured: []string{"apps/web: Service apps/web: forbidden"}}, nil
	}, nil)
	if runs.Load() != 1 || len(s.Rows) != 1 || s.Rows[0].Context != "up" || len(s.Unmeasured) != 1 || s.Unmeasured[0] != "context up: apps/web: Service apps/web: forbidden" {
		t.Fatalf("runs %d, rows %+v, unmeasured %q", runs.Load(), s.Rows, s.Unmeasured)
	}
	if len(s.Clusters) != 3 || len(configs) != 3 {
		t.Fatalf("clusters %+v", s.Clusters)
	}
	for i, want := range []struct{ context, server, err string }{
		{"down", down.URL, "unreachable"},
		{"up", up.URL, ""},
		{"missing", "", `context "missing" does not exist`},
	} {
		c := s.Clusters[i]
		if c.Context != want.context || c.Server != want.server || !c.CheckedAt.Equal(at) || (want.err == "") != (c.Error == "") || !strings.Contains(c.Error, want.err) {
			t.Errorf("cluster %d: %+v, want context %s, server %q, error containing %q", i, c, want.context, want.server, want.err)
		}
	}
	if configs[2] != nil {
		t.Errorf("a configuration for the missing context")
	}
}

// TestSummariesEach: a run over many releases measured out of order gives Measure.Each every
// row once, in the summary's order, and keeps no row's report afterwards.
func TestSummariesEach(t *testing.T) {
	const n = 40
	var got []string
	m := Measure{Options: diff.Options{Workers: 32, Views: true}, Each: func(row diff.SummaryRow) {
		if row.Report == nil && row.Error == "" {
			t.Errorf("row %s given without its report", row.Release)
		}
		got = append(got, row.Release)
	}}
	s := summaries(n, m, func(i int) (*diff.Report, diff.SummaryRow, string, error) {
		time.Sleep(time.Duration((n-i)%7) * time.Millisecond) // later rows often finish first
		name := fmt.Sprintf("r%02d", i)
		if i%9 == 0 {
			return nil, diff.SummaryRow{Release: name}, name, errors.New("unreachable")
		}
		return &diff.Report{Release: name}, diff.SummaryRow{}, name, nil
	})
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("r%02d", i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Each got %v, want %v", got, want)
	}
	for _, r := range s.Rows {
		if r.Report != nil {
			t.Errorf("row %s kept its report", r.Release)
		}
	}
}
