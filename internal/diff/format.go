package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/compare"
)

// Formats are the output formats of Write.
var Formats = []string{"table", "json", "yaml", "markdown", "counts"}

// classColour is the ANSI colour of each class on a terminal.
var classColour = map[compare.Class]string{
	compare.Differs: "33", compare.ChartOnly: "32", compare.ClusterOnly: "31", compare.Shadows: "35",
}

// Write prints reports in format. colour adds ANSI colours to the table's classes. counts
// prints no field, key or value: only numbers, for public CI logs.
func Write(w io.Writer, reps []*Report, format string, colour bool) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(reps) == 1 {
			return enc.Encode(reps[0])
		}
		return enc.Encode(map[string]any{"releases": reps})
	case "yaml":
		var v any = reps
		if len(reps) == 1 {
			v = reps[0]
		}
		b, err := sigsyaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "counts":
		for _, r := range reps {
			writeCounts(w, r)
		}
		return nil
	case "markdown":
		for _, r := range reps {
			writeMarkdown(w, r)
		}
		return nil
	case "table":
		for i, r := range reps {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeTable(w, r, colour)
		}
		return nil
	}
	return fmt.Errorf("unknown output %q: want one of %s", format, strings.Join(Formats, ", "))
}

// cells returns a row's printed cells: chart, cluster, field (with flags) and the upgrade
// prediction. A Secret's values are never among them.
func cells(d Row) (field, chart, cluster, upgrade string) {
	chart, cluster = show(d.Chart), show(d.Cluster)
	if d.Redacted {
		chart, cluster = redactedCell(d.ChartBytes), redactedCell(d.ClusterBytes)
		if d.Class == compare.ChartOnly {
			cluster = "-"
		}
		if d.Class == compare.ClusterOnly {
			chart = "-"
		}
	}
	if d.Class == compare.Shadows {
		verdict := "values not comparable (valueFrom)"
		if d.Agree != nil && *d.Agree {
			verdict = "values agree"
		} else if d.Agree != nil {
			verdict = "values differ"
		}
		chart, cluster = "inline env", "hides "+d.From+": "+verdict
	}
	field = d.Path
	var flags []string
	if d.Inert {
		flags = append(flags, "inert")
	}
	if d.PendingDeletion {
		flags = append(flags, "pending deletion")
	}
	if d.Unstable {
		flags = append(flags, "unstable")
	}
	if len(flags) > 0 {
		field += " (" + strings.Join(flags, ", ") + ")"
	}
	upgrade = "no: " + d.Why
	if d.Resolved {
		upgrade = "yes: " + d.Why
	}
	return field, chart, cluster, upgrade
}

// redactedCell shows a Secret's value by its size only: "(redacted, 8 bytes)".
func redactedCell(size *int) string {
	if size == nil {
		return compare.Redacted(-1, nil)
	}
	return compare.Redacted(*size, nil)
}

// RedactedChange says how a Secret's value changes without showing it: "(redacted, 8 bytes ->
// 12 bytes)", the cluster's size first.
func RedactedChange(d Row) string {
	switch {
	case d.ClusterBytes != nil && d.ChartBytes != nil:
		return compare.Redacted(*d.ClusterBytes, d.ChartBytes)
	case d.ClusterBytes != nil:
		return redactedCell(d.ClusterBytes)
	}
	return redactedCell(d.ChartBytes)
}

func writeTable(w io.Writer, r *Report, colour bool) {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	header := false
	last := "UPGRADE"
	if r.Next != nil {
		fmt.Fprintf(w, "HelmRelease %s: next reconcile: %s: %s\n", r.HelmRelease, r.Next.Action, r.Next.Reason)
		last = "NEXT RECONCILE"
	}
	if r.WillFail > 0 {
		fmt.Fprintf(w, "this upgrade will fail: the API server refuses %d objects (WILL-FAIL below)\n", r.WillFail)
	}
	moved := ""
	if r.Rendered {
		moved = "MOVED\t"
	}
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if !header {
				fmt.Fprintln(tw, "OBJECT\tCLASS\tFIELD\tCHART\tCLUSTER\t"+moved+last)
				header = true
			}
			field, chart, cluster, upgrade := cells(d)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\n", o.Object, d.Class, field, oneLine(chart), oneLine(cluster), movedCell(r, d, "\t"), upgrade)
		}
	}
	tw.Flush()
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, line := range lines {
		if colour && i > 0 {
			// Coloured after alignment: tabwriter would count the escape codes as width.
			for class, c := range classColour {
				if strings.Contains(line, "  "+string(class)+"  ") {
					line = strings.Replace(line, "  "+string(class)+"  ", "  \x1b["+c+"m"+string(class)+"\x1b[0m  ", 1)
					break
				}
			}
		}
		io.WriteString(w, line)
	}
	for _, p := range r.Prune {
		fmt.Fprintf(w, "TO PRUNE  %s%s\n", p.Object, pruneNote(p))
	}
	for _, o := range r.Objects {
		switch {
		case o.Refused != "":
			fmt.Fprintf(w, "REFUSED  %s: %s\n", o.Object, o.Refused)
		case o.Adopted:
			fmt.Fprintf(w, "ADOPTED  %s: it exists without this release's ownership metadata; --take-ownership takes it over\n", o.Object)
		}
		if o.Refusal != nil {
			fmt.Fprintf(w, "WILL-FAIL  %s: %s\n", o.Object, refusalText(o.Refusal))
		}
	}
	for _, o := range r.Objects {
		if o.Error != "" {
			fmt.Fprintf(w, "COULD NOT MEASURE  %s: %s\n", o.Object, o.Error)
		}
	}
	for _, o := range r.Objects {
		if o.Normalize != r.Normalize && o.Normalize != Server && o.Normalize != Offline && o.Normalize != "-" {
			fmt.Fprintf(w, "note: %s: normalize %s\n", o.Object, o.Normalize)
		}
	}
	if r.Engine != "" {
		fmt.Fprintf(w, "note: rendered with %s\n", r.Engine)
	}
	if r.Source != "" {
		fmt.Fprintf(w, "note: chart from %s\n", r.Source)
	}
	if l := r.Lookup; l != nil {
		fmt.Fprintf(w, "note: %s\n", lookupText(l))
	}
	if n := renderDependent(r); n > 0 {
		fmt.Fprintf(w, "note: %d fields moved with the chart although its chart and values are the stored release's: the chart renders them differently each time or once its objects exist (lookup); nobody changed the cluster there\n", n)
	}
	if r.Unstable > 0 {
		fmt.Fprintf(w, "note: %d unstable fields: two renders of the same inputs disagree on them (random values, timestamps), so every upgrade changes them; %s\n", r.Unstable, unstableCounted(r))
	}
	if r.Defaulting != "" && usedOffline(r) {
		fmt.Fprintf(w, "note: offline normalisation: %s\n", r.Defaulting)
	}
	fmt.Fprintln(w, summary(r))
	if f := r.Stamp.footer(); f != "" {
		fmt.Fprintln(w, f)
	}
}

// lookupText says whom the chart's lookup calls were answered as.
func lookupText(l *Lookup) string {
	if l.Impersonated {
		return "lookup answered as " + l.Account + ", impersonated as helm-controller does"
	}
	return "lookup answered as you, not as " + l.Account + " as helm-controller would: " + l.Reason + "; a chart that looks up what one of you may not read renders differently here"
}

// movedCell is a row's MOVED cell and sep, for a report of a new render ("" otherwise).
func movedCell(r *Report, d Row, sep string) string {
	if !r.Rendered {
		return ""
	}
	return d.Moved + sep
}

// renderDependent counts the rows the chart moved with the stored release's chart and values.
func renderDependent(r *Report) int {
	n := 0
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if d.RenderDependent {
				n++
			}
		}
	}
	return n
}

// refusalText reads "422 Invalid: spec.selector: field is immutable".
func refusalText(r *Refusal) string {
	return fmt.Sprintf("%d %s: %s", r.Code, r.Reason, r.Message)
}

func unstableCounted(r *Report) string {
	if r.CountedUnstable {
		return "counted as drift (--count-unstable)"
	}
	return "not counted as drift (--count-unstable counts them)"
}

// usedOffline reports whether any object was normalised offline.
func usedOffline(r *Report) bool {
	for _, o := range r.Objects {
		if strings.HasPrefix(o.Normalize, Offline) {
			return true
		}
	}
	return false
}

func pruneNote(p Prune) string {
	switch {
	case p.Keep:
		return " (helm.sh/resource-policy: keep: Helm leaves it in the cluster)"
	case !p.Live:
		return " (already gone from the cluster)"
	}
	return ""
}

// summary is the last line of the table: "release apps/web revision 3 (client-side apply,
// normalize auto): 2 divergences across 64 compared fields in 6 objects; 1 pending deletion; 1
// object to prune".
func summary(r *Report) string {
	s := fmt.Sprintf("release %s/%s revision %d (%s apply, normalize %s): %s", r.Namespace, r.Release, r.Revision, r.Apply, r.Normalize, measured(r))
	if r.PendingDeletions > 0 {
		s += fmt.Sprintf("; %d pending deletions", r.PendingDeletions)
	}
	if len(r.Prune) > 0 {
		s += fmt.Sprintf("; %d objects to prune", len(r.Prune))
	}
	if r.Refused > 0 {
		s += fmt.Sprintf("; %d objects Helm refuses to adopt", r.Refused)
	}
	if r.Rendered && r.Divergences > 0 {
		s += fmt.Sprintf("; %d drift, %d changes %s brings", r.DriftRows, r.Changes, bringer(r))
	}
	return s
}

// bringer names what brings a render's changes: the upgrade, or the HelmRelease's next
// reconcile.
func bringer(r *Report) string {
	if r.Next != nil {
		return "an upgrade"
	}
	return "the upgrade"
}

// measured says how much was found where: "5 divergences across 61 compared fields in 4
// objects", led by what could not be measured, so that such a line never looks clean.
func measured(r *Report) string {
	s := ""
	if r.Unmeasured > 0 {
		s = fmt.Sprintf("could not measure %d of %d objects; in the others, ", r.Unmeasured, len(r.Objects))
	}
	return s + fmt.Sprintf("%d divergences across %d compared fields in %d objects", r.Divergences, r.Compared, len(r.Objects)-r.Unmeasured)
}

func writeCounts(w io.Writer, r *Report) {
	fmt.Fprintf(w, "release %s/%s revision %d: %s (normalize %s)\n", r.Namespace, r.Release, r.Revision, measured(r), r.Normalize)
	for _, c := range []compare.Class{compare.Differs, compare.ChartOnly, compare.ClusterOnly, compare.Shadows} {
		fmt.Fprintf(w, "  %-17s %d\n", c, r.Counts[c])
	}
	fmt.Fprintf(w, "  %-17s %d\n  %-17s %d\n", "pending deletions", r.PendingDeletions, "to prune", len(r.Prune))
	if r.Rendered {
		fmt.Fprintf(w, "  %-17s %d (the cluster moved)\n  %-17s %d (the chart moved: %s brings them)\n", "drift", r.DriftRows, "changes", r.Changes, bringer(r))
	}
	if r.Unstable > 0 {
		fmt.Fprintf(w, "  %-17s %d (%s)\n", "unstable", r.Unstable, unstableCounted(r))
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "  %-17s %d objects (Helm refuses to adopt them)\n", "refused", r.Refused)
	}
	if r.WillFail > 0 {
		fmt.Fprintf(w, "  %-17s %d objects (the API server refuses them: the upgrade fails)\n", "will fail", r.WillFail)
	}
	if r.Unmeasured > 0 {
		fmt.Fprintf(w, "  %-17s %d objects\n", "could not measure", r.Unmeasured)
	}
	if !r.CheckedAt.IsZero() {
		// The time only: a context's name and a server's address are not for public logs.
		fmt.Fprintf(w, "  %-17s %s\n", "measured", r.CheckedAt.Format(time.RFC3339))
	}
}

func writeMarkdown(w io.Writer, r *Report) {
	fmt.Fprintf(w, "### %s/%s revision %d\n\n", r.Namespace, r.Release, r.Revision)
	if r.WillFail > 0 {
		fmt.Fprintf(w, "**This upgrade will fail**: the API server refuses %d objects.\n\n", r.WillFail)
	}
	rows := 0
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if rows == 0 && r.Rendered {
				fmt.Fprintln(w, "| Object | Class | Field | Chart | Cluster | Moved | Upgrade |\n|---|---|---|---|---|---|---|")
			} else if rows == 0 {
				fmt.Fprintln(w, "| Object | Class | Field | Chart | Cluster | Upgrade |\n|---|---|---|---|---|---|")
			}
			rows++
			field, chart, cluster, upgrade := cells(d)
			fmt.Fprintf(w, "| %s | %s | `%s` | %s | %s | %s%s |\n", md(o.Object), d.Class, strings.ReplaceAll(field, "`", "'"), md(chart), md(cluster), movedCell(r, d, " | "), md(upgrade))
		}
	}
	if rows > 0 {
		fmt.Fprintln(w)
	}
	for _, p := range r.Prune {
		fmt.Fprintf(w, "- to prune: %s%s\n", md(p.Object), md(pruneNote(p)))
	}
	for _, o := range r.Objects {
		if o.Refusal != nil {
			fmt.Fprintf(w, "- will fail: %s: %s\n", md(o.Object), md(refusalText(o.Refusal)))
		}
		if o.Error != "" {
			fmt.Fprintf(w, "- could not measure: %s: %s\n", md(o.Object), md(o.Error))
		}
	}
	if l := r.Lookup; l != nil && !l.Impersonated {
		fmt.Fprintf(w, "- note: %s\n", md(lookupText(l)))
	}
	if len(r.Prune) > 0 || r.Unmeasured > 0 || r.WillFail > 0 || (r.Lookup != nil && !r.Lookup.Impersonated) {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s\n\n", md(summary(r)))
	if f := r.Stamp.footer(); f != "" {
		fmt.Fprintf(w, "_%s_\n\n", md(f))
	}
}

func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(oneLine(s))
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "…"
	}
	return s
}

func show(v any) string {
	switch t := v.(type) {
	case nil:
		return "-"
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// SummaryRow is one release of "diff release --all".
type SummaryRow struct {
	// Report is the release's whole report, kept for the line views (Input.Views).
	Report *Report `json:"-"`
	// Suggested are the release's suggested ignore rules (Input.Suggest).
	Suggested *advise.Advice `json:"suggestedIgnore,omitempty"`
	// HelmRelease and Next: the Flux HelmRelease and its next reconcile's action (diff
	// helmrelease --all only).
	HelmRelease string `json:"helmRelease,omitempty"`
	Next        string `json:"nextReconcile,omitempty"`
	// Context is the kubeconfig context of the release's cluster.
	Context          string                `json:"context,omitempty"`
	Release          string                `json:"release"`
	Namespace        string                `json:"namespace"`
	Revision         int                   `json:"revision"`
	Divergences      int                   `json:"divergences"`
	Compared         int                   `json:"compared"`
	Counts           map[compare.Class]int `json:"counts"`
	PendingDeletions int                   `json:"pendingDeletions"`
	// Drift and Changes split the divergences: the cluster moved, or only the chart did.
	Drift   int `json:"drift"`
	Changes int `json:"changes"`
	// Unmeasured counts the objects that could not be measured.
	Unmeasured int `json:"unmeasured"`
	// Error says why the release could not be measured.
	Error string `json:"error,omitempty"`
}

// Summarise turns a report into its summary row.
func Summarise(r *Report) SummaryRow {
	row := SummaryRow{Release: r.Release, Namespace: r.Namespace, Revision: r.Revision, Divergences: r.Divergences,
		Compared: r.Compared, Counts: r.Counts, PendingDeletions: r.PendingDeletions, Drift: r.DriftRows, Changes: r.Changes, Unmeasured: r.Unmeasured,
		Suggested: r.Suggested}
	if r.Next != nil {
		row.HelmRelease, row.Next = r.HelmRelease, r.Next.Action
	}
	return row
}

// summaryDoc is a summary as JSON and YAML: when and against what it was measured (one
// cluster: its stamp; several: the earliest time, each cluster in Clusters), then the rows.
type summaryDoc struct {
	Stamp
	Clusters []ClusterRun `json:"clusters,omitempty"`
	Releases []SummaryRow `json:"releases"`
}

// WriteSummary prints the rows of a run over many releases in format, then when and against
// what each of clusters was measured. With more than one cluster the table has a CONTEXT
// column, and a cluster that could not be measured at all is one row saying why.
func WriteSummary(w io.Writer, rows []SummaryRow, clusters []ClusterRun, format string) error {
	if rows == nil {
		rows = []SummaryRow{}
	}
	switch format {
	case "json", "yaml":
		doc := summaryDoc{Clusters: clusters, Releases: rows}
		if len(clusters) == 1 {
			doc.Stamp = clusters[0].Stamp
		}
		for _, c := range clusters {
			if doc.CheckedAt.IsZero() || (!c.CheckedAt.IsZero() && c.CheckedAt.Before(doc.CheckedAt)) {
				doc.CheckedAt = c.CheckedAt
			}
		}
		if format == "yaml" {
			b, err := sigsyaml.Marshal(doc)
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	sep, line, end := "\t", "", ""
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	out := io.Writer(tw)
	if format == "markdown" {
		sep, line, end, out = " | ", "| ", " |", w
	}
	hr, multi := false, len(clusters) > 1
	for _, r := range rows {
		hr = hr || r.HelmRelease != ""
	}
	lead := func(r SummaryRow) []string {
		cells := []string{r.Namespace + "/" + r.Release}
		if hr {
			cells = []string{r.HelmRelease, r.Next, r.Namespace + "/" + r.Release}
		}
		if multi {
			cells = append([]string{r.Context}, cells...)
		}
		return cells
	}
	head := []string{"RELEASE"}
	if hr {
		head = []string{"HELMRELEASE", "NEXT RECONCILE", "RELEASE"}
	}
	if multi {
		head = append([]string{"CONTEXT"}, head...)
	}
	fmt.Fprintln(out, line+strings.Join(append(head, "DIVERGENCES/COMPARED", "DIFFERS", "CHART-ONLY", "CLUSTER-ONLY", "SHADOWS", "PENDING DELETIONS"), sep)+end)
	if format == "markdown" {
		fmt.Fprintln(out, "|"+strings.Repeat("---|", len(head)+6))
	}
	cell := func(s string) string {
		if format == "markdown" {
			return md(s)
		}
		return oneLine(s)
	}
	// A row that says why it could not be measured ends with that text: in a table, the last
	// cell of a line is no column, so a long error does not widen the counts' columns.
	last := func(cells []string, text string) string {
		if format == "markdown" {
			return line + strings.Join(append(cells, text, "", "", "", "", ""), sep) + end
		}
		return strings.Join(append(cells, text), sep)
	}
	writeRow := func(r SummaryRow) {
		switch {
		case r.Error != "":
			fmt.Fprintln(out, last(lead(r), "could not measure: "+cell(r.Error)))
		case r.Unmeasured > 0:
			fmt.Fprintln(out, last(lead(r), fmt.Sprintf("could not measure %d objects", r.Unmeasured)))
		default:
			fmt.Fprintln(out, line+strings.Join(append(lead(r), fmt.Sprintf("%d/%d", r.Divergences, r.Compared),
				fmt.Sprint(r.Counts[compare.Differs]), fmt.Sprint(r.Counts[compare.ChartOnly]), fmt.Sprint(r.Counts[compare.ClusterOnly]),
				fmt.Sprint(r.Counts[compare.Shadows]), fmt.Sprint(r.PendingDeletions)), sep)+end)
		}
	}
	if !multi {
		for _, r := range rows {
			writeRow(r)
		}
	} else {
		// Cluster by cluster, in the order asked: its rows, or the row saying why it has none.
		for _, c := range clusters {
			for _, r := range rows {
				if r.Context == c.Context {
					writeRow(r)
				}
			}
			if c.Error != "" {
				cells := make([]string, len(head))
				for i := range cells {
					cells[i] = "-"
				}
				cells[0] = c.Context
				fmt.Fprintln(out, last(cells, "could not measure the cluster: "+cell(c.Error)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := summaryFooter(clusters); f != "" {
		if format == "markdown" {
			f = "\n_" + md(f) + "_"
		}
		fmt.Fprintln(w, f)
	}
	return nil
}

// Summary is the report's last line in the table and the views: "release apps/web revision 3
// (client-side apply, normalize auto): 2 divergences across 64 compared fields in 6 objects".
func (r *Report) Summary() string { return summary(r) }

// Footer says when and against what the report was measured ("" when it is not stamped).
func (m Stamp) Footer() string { return m.footer() }

// Footer is a summary's last line: when and against what each cluster was measured.
func Footer(clusters []ClusterRun) string { return summaryFooter(clusters) }

// Annotation is one row in a sentence for the line views, never a Secret's value:
// "DIFFERS spec.replicas (moved by the cluster): upgrade: yes: resets it to the chart's value (set by kubectl-scale)".
func Annotation(r *Report, d Row) string {
	field, _, _, verdict := cells(d)
	s := string(d.Class) + " " + field
	switch {
	case d.Redacted:
		s += " " + RedactedChange(d)
	case d.Class == compare.Shadows:
		_, chart, cluster, _ := cells(d)
		s += ": " + chart + " " + cluster
	}
	if r.Rendered && d.Moved != "" {
		s += " (moved by " + map[string]string{MovedCluster: "the cluster", MovedChart: "the chart", MovedBoth: "both"}[d.Moved] + ")"
	}
	who := "upgrade"
	if r.Next != nil {
		who = "next reconcile"
	}
	s += ": " + who + ": " + verdict
	if len(d.Managers) > 0 && !strings.Contains(verdict, "(set by ") {
		s += " (set by " + strings.Join(d.Managers, ", ") + ")"
	}
	return oneLine(s)
}

// Notes are the report's lines beside its rows, for the line views: the next reconcile, the
// objects the upgrade fails on, adopts or prunes, those that could not be measured, and how it
// was rendered.
func Notes(r *Report) []string {
	var buf strings.Builder
	if r.Next != nil {
		fmt.Fprintf(&buf, "HelmRelease %s: next reconcile: %s: %s\n", r.HelmRelease, r.Next.Action, r.Next.Reason)
	}
	if r.WillFail > 0 {
		fmt.Fprintf(&buf, "this upgrade will fail: the API server refuses %d objects (WILL-FAIL below)\n", r.WillFail)
	}
	for _, o := range r.Objects {
		switch {
		case o.Refused != "":
			fmt.Fprintf(&buf, "REFUSED  %s: %s\n", o.Object, o.Refused)
		case o.Adopted:
			fmt.Fprintf(&buf, "ADOPTED  %s: it exists without this release's ownership metadata; --take-ownership takes it over\n", o.Object)
		}
		if o.Refusal != nil {
			fmt.Fprintf(&buf, "WILL-FAIL  %s: %s\n", o.Object, refusalText(o.Refusal))
		}
		if o.Error != "" {
			fmt.Fprintf(&buf, "COULD NOT MEASURE  %s: %s\n", o.Object, o.Error)
		}
	}
	if r.Engine != "" {
		fmt.Fprintf(&buf, "note: rendered with %s\n", r.Engine)
	}
	if r.Source != "" {
		fmt.Fprintf(&buf, "note: chart from %s\n", r.Source)
	}
	if l := r.Lookup; l != nil {
		fmt.Fprintf(&buf, "note: %s\n", lookupText(l))
	}
	if r.Unstable > 0 {
		fmt.Fprintf(&buf, "note: %d unstable fields: two renders of the same inputs disagree on them; %s\n", r.Unstable, unstableCounted(r))
	}
	if buf.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// PruneText names an object the upgrade removes: "ConfigMap apps/legacy (helm.sh/resource-policy: keep: ...)".
func PruneText(p Prune) string { return p.Object + pruneNote(p) }
