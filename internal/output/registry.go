package output

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// A Format prints what diff measured one way: one release's report, or the rows of a run over
// many. Each format is one file of this package that registers itself (register); its golden
// test is beside it in format_test.go or lineviews_test.go.
type Format struct {
	// Name is what --output takes.
	Name string
	// Rank orders the formats in --help and in errors.
	Rank int
	// Help says in a few words what the format is, where its name does not.
	Help string
	// Report prints one release's report (its Stamp set).
	Report func(w io.Writer, rep *diff.Report, o Options) error
	// Summary prints the rows of a run over many releases, then when and against what each of
	// clusters was measured.
	Summary func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, o Options) error
	// Sides says the format shows each object's two sides: the measurement must keep them
	// (diff.Input.Views), and a run over many releases every report.
	Sides bool
}

var formats = map[string]Format{}

// register adds a format; each format's file calls it from init.
func register(f Format) {
	if _, dup := formats[f.Name]; dup {
		panic("output: format " + f.Name + " registered twice")
	}
	formats[f.Name] = f
}

// Lookup returns the format --output names.
func Lookup(name string) (Format, error) {
	if f, ok := formats[name]; ok {
		return f, nil
	}
	return Format{}, fmt.Errorf("unknown output %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Names are the formats' names, in their order.
func Names() []string {
	all := make([]Format, 0, len(formats))
	for _, f := range formats {
		all = append(all, f)
	}
	slices.SortFunc(all, func(a, b Format) int { return a.Rank - b.Rank })
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = f.Name
	}
	return names
}

// Usage lists the formats for --output's help: "table, json, ..., diff (a unified diff per
// object), ...".
func Usage() string {
	names := Names()
	for i, n := range names {
		if h := formats[n].Help; h != "" {
			names[i] = n + " (" + h + ")"
		}
	}
	return strings.Join(names, ", ")
}

// sideBySide is Report for the formats that print rows: one report as one row.
func sideBySide(summary func(io.Writer, []diff.SummaryRow, []diff.ClusterRun, Options) error) func(io.Writer, *diff.Report, Options) error {
	return func(w io.Writer, rep *diff.Report, o Options) error {
		row := diff.Summarise(rep)
		row.Report = rep
		return summary(w, []diff.SummaryRow{row}, []diff.ClusterRun{{Stamp: rep.Stamp}}, o)
	}
}

// WriteReport prints one release's report in the format named.
func WriteReport(w io.Writer, rep *diff.Report, format string, o Options) error {
	f, err := Lookup(format)
	if err != nil {
		return err
	}
	return f.Report(w, rep, o)
}

// WriteSummary prints the rows of a run over many releases in the format named.
func WriteSummary(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, format string, o Options) error {
	f, err := Lookup(format)
	if err != nil {
		return err
	}
	return f.Summary(w, rows, clusters, o)
}
