package diff

import (
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

// ClusterRun is one cluster of a summary: when and against what it was measured, and why it
// could not be measured at all (its releases could not even be listed).
type ClusterRun struct {
	Stamp
	Error string `json:"error,omitempty"`
}
