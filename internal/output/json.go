package output

import (
	"encoding/json"
	"io"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// summaryDoc is a summary as JSON and YAML: when and against what it was measured (one
// cluster: its stamp; several: the earliest time, each cluster in Clusters), then the rows.
type summaryDoc struct {
	diff.Stamp
	Clusters []diff.ClusterRun `json:"clusters,omitempty"`
	Releases []diff.SummaryRow `json:"releases"`
}

func init() {
	register(Format{Name: "json", Rank: 1,
		Report: func(w io.Writer, rep *diff.Report, _ Options) error { return writeJSON(w, rep) },
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, _ Options) error {
			return writeJSON(w, summaryDocOf(rows, clusters))
		}})
	register(Format{Name: "yaml", Rank: 2,
		Report: func(w io.Writer, rep *diff.Report, _ Options) error { return writeYAML(w, rep) },
		Summary: func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, _ Options) error {
			return writeYAML(w, summaryDocOf(rows, clusters))
		}})
}

// summaryDocOf is the document of a run over many releases: one cluster's stamp, or the
// earliest time of several, each cluster in Clusters.
func summaryDocOf(rows []diff.SummaryRow, clusters []diff.ClusterRun) summaryDoc {
	if rows == nil {
		rows = []diff.SummaryRow{}
	}
	doc := summaryDoc{Clusters: clusters, Releases: rows}
	if len(clusters) == 1 {
		doc.Stamp = clusters[0].Stamp
	}
	for _, c := range clusters {
		if doc.CheckedAt.IsZero() || (!c.CheckedAt.IsZero() && c.CheckedAt.Before(doc.CheckedAt)) {
			doc.CheckedAt = c.CheckedAt
		}
	}
	return doc
}

// writeJSON prints v as indented JSON (the schema: docs/json.md).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeYAML prints v as YAML, with JSON's field names.
func writeYAML(w io.Writer, v any) error {
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
