package output

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// sample is a report with one row of each kind the formats print differently.
func sample() *diff.Report {
	agree, differ := true, false
	twelve, eight := 12, 8
	return &diff.Report{Stamp: diff.NewStamp(time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC), "prod-eu", "https://10.0.0.1:6443"), Release: "web", Namespace: "apps", Revision: 3, Normalize: diff.Auto, Apply: "server-side", Divergences: 6, Compared: 64,
		Rendered: true, DriftRows: 3, Changes: 3, WillFail: 1,
		Counts: map[compare.Class]int{compare.Differs: 2, compare.ChartOnly: 1, compare.ClusterOnly: 2, compare.Shadows: 2}, PendingDeletions: 1,
		Objects: []diff.Object{
			{Object: "ConfigMap apps/web-extra", Missing: true, Normalize: "-", Compared: 1, Rows: []diff.Row{
				{Class: compare.ChartOnly, Path: "(whole object)", Resolved: true, Why: "created", Moved: diff.MovedChart}}},
			{Object: "Deployment.apps apps/web", Normalize: string(diff.Server), Compared: 60,
				Refusal: &diff.Refusal{Reason: "Invalid", Code: 422, Field: "spec.selector", Message: "spec.selector: field is immutable"}, Rows: []diff.Row{
					{Class: compare.Differs, Path: "spec.replicas", Pointer: "/spec/replicas", Chart: int64(2), Cluster: int64(3), Why: "conflict with kubectl-patch: helm upgrade fails unless --force-conflicts", Managers: []string{"kubectl-patch"}, Moved: diff.MovedBoth},
					{Class: compare.ClusterOnly, Path: "spec.template.metadata.annotations.old", Pointer: "/spec/template/metadata/annotations/old", Cluster: "1", PendingDeletion: true, Resolved: true, Why: "removes it (in the last release, not in the new render)", Moved: diff.MovedChart},
					{Class: compare.ClusterOnly, Path: "spec.template.spec.containers[name=web].livenessProbe.initialDelaySeconds", Cluster: int64(30), Inert: true, Why: "kept: the chart does not state it", Moved: diff.MovedCluster},
					{Class: compare.Shadows, Path: "spec.template.spec.containers[name=web].env[name=LOG_LEVEL]", From: "ConfigMap web-settings", Agree: &agree, Why: "kept", Moved: diff.MovedCluster},
					{Class: compare.Shadows, Path: "spec.template.spec.containers[name=web].env[name=TOKEN]", From: "Secret web-creds", Agree: &differ, Redacted: true, Why: "kept", Moved: diff.MovedCluster}}},
			{Object: "Service apps/web", Normalize: "-", Error: "forbidden: needs list on services in namespace apps", Rows: []diff.Row{}},
			{Object: "Secret apps/web-creds", Normalize: "offline (dry-run forbidden: no create on secrets)", Compared: 3, Rows: []diff.Row{
				{Class: compare.Differs, Path: "data.password", Pointer: "/data/password", Redacted: true, ChartBytes: &twelve, ClusterBytes: &eight, Resolved: true, Why: "resets it to the chart's value", Moved: diff.MovedChart, RenderDependent: true}}},
		},
		Prune:      []diff.Prune{{Object: "ConfigMap apps/legacy", Live: true}, {Object: "ConfigMap apps/kept", Keep: true, Live: true}},
		Unmeasured: 1,
	}
}

func TestWriteGolden(t *testing.T) {
	for _, format := range []string{"table", "markdown", "counts", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteReport(&b, sample(), format, Options{}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(golden.Root(), "diff", "format", "report."+format), b.String())
		})
	}
}

// TestCountsPrintNoKeyOrValue: -o counts is safe for public CI logs.
func TestCountsPrintNoKeyOrValue(t *testing.T) {
	var b bytes.Buffer
	WriteReport(&b, sample(), "counts", Options{})
	for _, leak := range []string{"replicas", "LOG_LEVEL", "password", "web-creds", "kubectl-patch", "annotations"} {
		if strings.Contains(b.String(), leak) {
			t.Errorf("-o counts printed %q:\n%s", leak, b.String())
		}
	}
}

// TestColour: the classes are coloured when asked, and the columns still line up.
func TestColour(t *testing.T) {
	var plain, coloured bytes.Buffer
	WriteReport(&plain, sample(), "table", Options{})
	WriteReport(&coloured, sample(), "table", Options{Colour: true})
	if !strings.Contains(coloured.String(), "\x1b[33mDIFFERS\x1b[0m") || strings.Contains(plain.String(), "\x1b[") {
		t.Fatalf("colour:\n%q", coloured.String())
	}
	stripped := strings.NewReplacer("\x1b[33m", "", "\x1b[32m", "", "\x1b[31m", "", "\x1b[35m", "", "\x1b[0m", "").Replace(coloured.String())
	if stripped != plain.String() {
		t.Errorf("coloured table does not line up with the plain one:\n%s\n%s", stripped, plain.String())
	}
}

// summaryRows are the rows of a run over two clusters: one measured, one not at all.
func summaryRows() ([]diff.SummaryRow, []diff.ClusterRun) {
	at := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	rows := []diff.SummaryRow{
		{Context: "prod-eu", Release: "web", Namespace: "apps", Revision: 3, Divergences: 2, Compared: 40, Drift: 2,
			Counts: map[compare.Class]int{compare.Differs: 1, compare.ClusterOnly: 1}},
		{Context: "prod-eu", Release: "db", Namespace: "data", Revision: 1, Compared: 12, Counts: map[compare.Class]int{}},
		{Context: "prod-eu", Release: "cache", Namespace: "data", Revision: 2, Error: "list secrets: forbidden | no access"},
	}
	clusters := []diff.ClusterRun{
		{Stamp: diff.NewStamp(at, "prod-eu", "https://10.0.0.1:6443")},
		{Stamp: diff.NewStamp(at.Add(time.Second), "prod-us", "https://10.0.0.2:6443"), Error: "Get \"https://10.0.0.2:6443/version\": dial tcp 10.0.0.2:6443: connect: connection refused"},
	}
	return rows, clusters
}

// TestWriteSummaryGolden: a summary over one cluster (no CONTEXT column, a footer naming it)
// and over two (a CONTEXT column, the cluster that could not be measured as one row, both in
// the footer and in JSON's clusters), in every format.
func TestWriteSummaryGolden(t *testing.T) {
	rows, clusters := summaryRows()
	for _, tc := range []struct {
		name     string
		rows     []diff.SummaryRow
		clusters []diff.ClusterRun
	}{
		{"one", rows, clusters[:1]},
		{"two", rows, clusters},
	} {
		for _, format := range []string{"table", "markdown", "json", "yaml"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := WriteSummary(&b, tc.rows, tc.clusters, format, Options{}); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join(golden.Root(), "diff", "format", "summary-"+tc.name+"."+format), b.String())
			})
		}
	}
}
