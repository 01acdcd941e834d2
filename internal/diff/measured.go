package diff

import (
	"fmt"
	"strings"
	"time"
)

// Stamp says when and against what a report or a summary was measured, so that a stale
// report can be told from a fresh one and one cluster's from another's.
type Stamp struct {
	// CheckedAt is when the measurement began (UTC, to the second).
	CheckedAt time.Time `json:"checkedAt,omitzero"`
	// Context is the kubeconfig context; Server the API server's URL.
	Context string `json:"context,omitempty"`
	Server  string `json:"server,omitempty"`
}

// NewStamp stamps a measurement of context's server beginning at t.
func NewStamp(t time.Time, context, server string) Stamp {
	return Stamp{CheckedAt: t.UTC().Truncate(time.Second), Context: context, Server: server}
}

// against names the cluster: `context "kind-a" (https://127.0.0.1:6443)`.
func (m Stamp) against() string {
	switch {
	case m.Context != "" && m.Server != "":
		return fmt.Sprintf("context %q (%s)", m.Context, m.Server)
	case m.Context != "":
		return fmt.Sprintf("context %q", m.Context)
	}
	return m.Server
}

// footer is the line under a report: "measured 2026-12-02T01:02:03Z against context ..."; empty
// for an unstamped report.
func (m Stamp) footer() string { return summaryFooter([]ClusterRun{{Stamp: m}}) }

// ClusterRun is one cluster of a summary: when and against what it was measured, and why it
// could not be measured at all (its releases could not even be listed).
type ClusterRun struct {
	Stamp
	Error string `json:"error,omitempty"`
}

// summaryFooter is the line under a summary: when and against what each cluster was measured.
func summaryFooter(clusters []ClusterRun) string {
	var parts []string
	for _, c := range clusters {
		if c.CheckedAt.IsZero() {
			continue
		}
		parts = append(parts, c.CheckedAt.Format(time.RFC3339)+" against "+c.against())
	}
	if len(parts) == 0 {
		return ""
	}
	return "measured " + strings.Join(parts, "; ")
}
