package diff

// ExitOn is what a measurement's verdict counts as a divergence (the --exit-code-on flag).
type ExitOn string

// The values of ExitOn.
const (
	// ExitOnChange: any divergence, pending deletion, object to prune, object Helm refuses or
	// write the API server refuses: what an upgrade would change or fail on, as helm-diff's
	// --detailed-exitcode.
	ExitOnChange ExitOn = "change"
	// ExitOnDrift: only fields the cluster moved away from what the stored release applied,
	// and an upgrade that will fail: a sentinel that stays quiet on changes the chart alone
	// brings.
	ExitOnDrift ExitOn = "drift"
)

// Verdict is what a measurement says, for an exit code: clean, diverging, or not measured
// (never reported as clean).
type Verdict int

// The verdicts, in increasing order of what wins when measurements are combined.
const (
	Clean Verdict = iota
	Diverging
	Unmeasured
)

// Tally is what a measurement found that its verdict reads: one release's report and its
// summary row tally alike, so that diff of one release and diff --all judge it the same.
type Tally struct {
	// Failed: the release could not be measured at all.
	Failed bool
	// Unmeasured counts the objects that could not be measured.
	Unmeasured int
	// Divergences counts the counted rows; Drift those the cluster moved.
	Divergences, Drift int
	// PendingDeletions counts the fields an upgrade would remove.
	PendingDeletions int
	// Refused counts the objects Helm would refuse to adopt; WillFail those the API server
	// refuses.
	Refused, WillFail int
	// Prunes counts the objects an upgrade would really delete (live, not kept).
	Prunes int
}

// Verdict judges t: Unmeasured if anything could not be measured, else Diverging by on, else
// Clean.
func (t Tally) Verdict(on ExitOn) Verdict {
	switch {
	case t.Failed || t.Unmeasured > 0:
		return Unmeasured
	case on == ExitOnDrift && (t.Drift > 0 || t.WillFail > 0):
		return Diverging
	case on != ExitOnDrift && (t.Divergences > 0 || t.PendingDeletions > 0 || t.Refused > 0 || t.WillFail > 0 || t.Prunes > 0):
		return Diverging
	}
	return Clean
}

// Tally is what the report found, for its verdict.
func (r *Report) Tally() Tally {
	t := Tally{Unmeasured: r.Unmeasured, Divergences: r.Divergences, Drift: r.DriftRows,
		PendingDeletions: r.PendingDeletions, Refused: r.Refused, WillFail: r.WillFail}
	for _, p := range r.Prune {
		if p.Live && !p.Keep {
			t.Prunes++ // one kept by helm.sh/resource-policy: keep, or already gone, is no change
		}
	}
	return t
}

// Tally is what the row's release was found to have, for its verdict.
func (r SummaryRow) Tally() Tally {
	return Tally{Failed: r.Error != "", Unmeasured: r.Unmeasured, Divergences: r.Divergences, Drift: r.Drift,
		PendingDeletions: r.PendingDeletions, Refused: r.Refused, WillFail: r.WillFail, Prunes: r.Prunes}
}
