package diff

import "testing"

// TestVerdict: what exits 2 by each --exit-code-on, and what exits 3. An object to prune is a
// change only when an upgrade would delete it: kept by helm.sh/resource-policy: keep, or
// already gone, it is listed but changes nothing.
func TestVerdict(t *testing.T) {
	for name, tc := range map[string]struct {
		rep           Report
		change, drift Verdict
	}{
		"clean":              {Report{}, Clean, Clean},
		"a change":           {Report{Divergences: 1, Changes: 1}, Diverging, Clean},
		"drift":              {Report{Divergences: 1, DriftRows: 1}, Diverging, Diverging},
		"a pending deletion": {Report{PendingDeletions: 1}, Diverging, Clean},
		"refused by Helm":    {Report{Refused: 1}, Diverging, Clean},
		"will fail":          {Report{WillFail: 1}, Diverging, Diverging},
		"prune, live":        {Report{Prune: []Prune{{Object: "ConfigMap a/b", Live: true}}}, Diverging, Clean},
		"prune, kept":        {Report{Prune: []Prune{{Object: "ConfigMap a/b", Live: true, Keep: true}}}, Clean, Clean},
		"prune, gone":        {Report{Prune: []Prune{{Object: "ConfigMap a/b"}}}, Clean, Clean},
		"unmeasured":         {Report{Unmeasured: 1, Divergences: 3, DriftRows: 3}, Unmeasured, Unmeasured},
	} {
		for on, want := range map[ExitOn]Verdict{ExitOnChange: tc.change, ExitOnDrift: tc.drift} {
			if got := tc.rep.Tally().Verdict(on); got != want {
				t.Errorf("%s, on %s: report %v, want %v", name, on, got, want)
			}
			// A summary row of the report is judged as the report.
			if got := Summarise(&tc.rep).Tally().Verdict(on); got != want {
				t.Errorf("%s, on %s: summary row %v, want %v", name, on, got, want)
			}
		}
	}
	if got := (SummaryRow{Error: "forbidden"}).Tally().Verdict(ExitOnChange); got != Unmeasured {
		t.Errorf("a release that could not be measured: %v, want Unmeasured", got)
	}
}
