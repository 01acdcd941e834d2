package output

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// cells returns a row's printed cells: chart, cluster, field (with flags) and the upgrade
// prediction. A Secret's values are never among them.
func cells(d diff.Row) (field, chart, cluster, upgrade string) {
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
func RedactedChange(d diff.Row) string {
	switch {
	case d.ClusterBytes != nil && d.ChartBytes != nil:
		return compare.Redacted(*d.ClusterBytes, d.ChartBytes)
	case d.ClusterBytes != nil:
		return redactedCell(d.ClusterBytes)
	}
	return redactedCell(d.ChartBytes)
}

// lookupText says whom the chart's lookup calls were answered as.
func lookupText(l *diff.Lookup) string {
	if l.Impersonated {
		return "lookup answered as " + l.Account + ", impersonated as helm-controller does"
	}
	return "lookup answered as you, not as " + l.Account + " as helm-controller would: " + l.Reason + "; a chart that looks up what one of you may not read renders differently here"
}

// movedCell is a row's MOVED cell and sep, for a report of a new render ("" otherwise).
func movedCell(r *diff.Report, d diff.Row, sep string) string {
	if !r.Rendered {
		return ""
	}
	return string(d.Moved) + sep
}

// renderDependent counts the rows the chart moved with the stored release's chart and values.
func renderDependent(r *diff.Report) int {
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
func refusalText(r *diff.Refusal) string {
	return fmt.Sprintf("%d %s: %s", r.Code, r.Reason, r.Message)
}

func unstableCounted(r *diff.Report) string {
	if r.CountedUnstable {
		return "counted as drift (--count-unstable)"
	}
	return "not counted as drift (--count-unstable counts them)"
}

// usedOffline reports whether any object was normalised offline.
func usedOffline(r *diff.Report) bool {
	for _, o := range r.Objects {
		if strings.HasPrefix(o.Normalize, string(diff.Offline)) {
			return true
		}
	}
	return false
}

func pruneNote(p diff.Prune) string {
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
func summary(r *diff.Report) string {
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
func bringer(r *diff.Report) string {
	if r.Next != nil {
		return "an upgrade"
	}
	return "the upgrade"
}

// measured says how much was found where: "5 divergences across 61 compared fields in 4
// objects", led by what could not be measured, so that such a line never looks clean.
func measured(r *diff.Report) string {
	s := ""
	if r.Unmeasured > 0 {
		s = fmt.Sprintf("could not measure %d of %d objects; in the others, ", r.Unmeasured, len(r.Objects))
	}
	return s + fmt.Sprintf("%d divergences across %d compared fields in %d objects", r.Divergences, r.Compared, len(r.Objects)-r.Unmeasured)
}

// firstLine is s up to its first line break, marked "…" where it was cut.
func firstLine(s string) string {
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

// Annotation is one row in a sentence for the line views, never a Secret's value:
// "DIFFERS spec.replicas (moved by the cluster): upgrade: yes: resets it to the chart's value (set by kubectl-scale)".
func Annotation(r *diff.Report, d diff.Row) string {
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
		s += " (moved by " + map[diff.Moved]string{diff.MovedCluster: "the cluster", diff.MovedChart: "the chart", diff.MovedBoth: "both"}[d.Moved] + ")"
	}
	who := "upgrade"
	if r.Next != nil {
		who = "next reconcile"
	}
	s += ": " + who + ": " + verdict
	if len(d.Managers) > 0 && !strings.Contains(verdict, "(set by ") {
		s += " (set by " + strings.Join(d.Managers, ", ") + ")"
	}
	return firstLine(s)
}

// Notes are the report's lines beside its rows, for the line views: the next reconcile, the
// objects the upgrade fails on, adopts or prunes, those that could not be measured, and how it
// was rendered.
func Notes(r *diff.Report) []string {
	var buf strings.Builder
	if r.Next != nil {
		fmt.Fprintf(&buf, "HelmRelease %s: next reconcile: %s: %s\n", r.HelmRelease, r.Next.Action, r.Next.Reason)
	}
	for _, c := range r.Causes {
		fmt.Fprintf(&buf, "cause: %s\n", c)
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
func PruneText(p diff.Prune) string { return p.Object + pruneNote(p) }
