package output

import (
	"fmt"
	"strings"
	"time"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// against names the cluster: `context "kind-a" (https://127.0.0.1:6443)`.
func against(m diff.Stamp) string {
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
func footer(m diff.Stamp) string { return summaryFooter([]diff.ClusterRun{{Stamp: m}}) }

// summaryFooter is the line under a summary: when and against what each cluster was measured.
func summaryFooter(clusters []diff.ClusterRun) string {
	var parts []string
	for _, c := range clusters {
		if c.CheckedAt.IsZero() {
			continue
		}
		parts = append(parts, c.CheckedAt.Format(time.RFC3339)+" against "+against(c.Stamp))
	}
	if len(parts) == 0 {
		return ""
	}
	return "measured " + strings.Join(parts, "; ")
}
