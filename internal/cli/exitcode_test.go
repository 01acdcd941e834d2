package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// exitReports are reports that each exit otherwise by one --exit-code-on, and the golden
// report of -o json.
func exitReports(t *testing.T) map[string]*diff.Report {
	reps := map[string]*diff.Report{
		"clean":              {},
		"a change":           {Divergences: 1, Changes: 1},
		"drift":              {Divergences: 1, DriftRows: 1},
		"a pending deletion": {PendingDeletions: 1},
		"refused by Helm":    {Refused: 1},
		"will fail":          {WillFail: 1},
		"delete only":        {Prune: []diff.Prune{{Object: "ConfigMap a/b", Live: true}}},
		"prune, kept":        {Prune: []diff.Prune{{Object: "ConfigMap a/b", Live: true, Keep: true}}},
		"unmeasured object":  {Unmeasured: 1, Objects: []diff.Object{{Object: "Service a/b", Error: "forbidden"}}},
	}
	b, err := os.ReadFile(filepath.Join(golden.Root(), "diff", "format", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep diff.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	reps["report.json"] = &rep
	return reps
}

// exitBothWays is the exit code of rep printed alone (diff release NAME) and as the one row
// of a run over many (diff release --all).
func exitBothWays(t *testing.T, rep *diff.Report, on diff.ExitOn) (one, all int) {
	t.Helper()
	c := &diffCommon{}
	fs := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	c.bind(fs, false)
	if err := fs.Parse([]string{"-o", "json", "--exit-code-on", string(on)}); err != nil {
		t.Fatal(err)
	}
	one = c.report(func() (*diff.Report, error) { return rep, nil }, io.Discard, io.Discard)
	row := diff.Summarise(rep)
	row.Report = rep
	all = c.writeSummary(&action.Summary{Rows: []diff.SummaryRow{row}}, nil, func(diff.SummaryRow) string { return "release a/b" }, io.Discard, io.Discard)
	return one, all
}

// TestExitCodeOneAndAll: one exit-code policy: a release exits the same printed alone and as a
// row of --all, by either --exit-code-on.
func TestExitCodeOneAndAll(t *testing.T) {
	want := map[string][2]int{ // by change, by drift
		"clean": {0, 0}, "a change": {2, 0}, "drift": {2, 2}, "a pending deletion": {2, 0}, "refused by Helm": {2, 0},
		"will fail": {2, 2}, "delete only": {2, 0}, "prune, kept": {0, 0}, "unmeasured object": {3, 3}, "report.json": {3, 3},
	}
	for name, rep := range exitReports(t) {
		for i, on := range []diff.ExitOn{diff.ExitOnChange, diff.ExitOnDrift} {
			one, all := exitBothWays(t, rep, on)
			if one != want[name][i] || all != one {
				t.Errorf("%s, --exit-code-on %s: alone %d, under --all %d; want %d both ways", name, on, one, all, want[name][i])
			}
		}
	}
}

// TestExitCodeE2EReports: every report of one release the end-to-end tests printed with -o json
// (recorded by e2e's helmDrift in $HELM_DRIFT_E2E_REPORTS; scripts/test.sh runs this test
// once they have run, with $HELM_DRIFT_E2E_REPORTS_RECORDED naming that directory) exits, judged as one release and as a row of --all, with the code the
// binary gave.
func TestExitCodeE2EReports(t *testing.T) {
	dir := os.Getenv("HELM_DRIFT_E2E_REPORTS_RECORDED")
	if dir == "" {
		t.Skip("HELM_DRIFT_E2E_REPORTS_RECORDED is not set: scripts/test.sh sets it and runs this test after the end-to-end tests")
	}
	files, err := filepath.Glob(filepath.Join(dir, "report-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("%d reports recorded in %s: the end-to-end tests print more than that", len(files), dir)
	}
	judged := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		codeLine, rest, _ := strings.Cut(string(b), "\n")
		argsLine, js, _ := strings.Cut(rest, "\n")
		args := strings.Split(argsLine, "\x00")
		code, err := strconv.Atoi(codeLine)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		on := diff.ExitOnChange
		for i, a := range args {
			if a == "--exit-code-on" && i+1 < len(args) {
				on = diff.ExitOn(args[i+1])
			} else if v, ok := strings.CutPrefix(a, "--exit-code-on="); ok {
				on = diff.ExitOn(v)
			}
		}
		var rep diff.Report
		if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.Objects == nil {
			continue // -o json of what prints no report
		}
		judged++
		if one, all := exitBothWays(t, &rep, on); one != code || all != code {
			t.Errorf("helm-drift %s: exited %d; judged alone %d, under --all %d", strings.Join(args, " "), code, one, all)
		}
	}
	t.Logf("%d reports of the end-to-end tests judged both ways", judged)
}

// Example_exitCode shows the policy over many releases: the worst verdict wins.
func Example_exitCode() {
	drifted := diff.Tally{Divergences: 1, Drift: 1}
	fmt.Println(exitCode(diff.ExitOnChange), exitCode(diff.ExitOnChange, drifted), exitCode(diff.ExitOnChange, drifted, diff.Tally{Failed: true}))
	// Output: 0 2 3
}

// TestSameErrors: the rows that failed alike are said once per error, in the order the first
// of each came, naming five and counting the others; a row alone is named as it is.
func TestSameErrors(t *testing.T) {
	var rows []diff.SummaryRow
	for i := range 8 {
		err := "chart repository unreachable"
		if i == 2 {
			err = "values: key missing"
		}
		rows = append(rows, diff.SummaryRow{HelmRelease: fmt.Sprintf("apps/hr-%d", i), Error: err})
	}
	rows = append(rows, diff.SummaryRow{HelmRelease: "apps/fine"})
	got := sameErrors(rows, func(r diff.SummaryRow) string { return "HelmRelease " + r.HelmRelease })
	want := []errorGroup{
		{"7 alike (HelmRelease apps/hr-0; HelmRelease apps/hr-1; HelmRelease apps/hr-3; HelmRelease apps/hr-4; HelmRelease apps/hr-5; and 2 more)", "chart repository unreachable"},
		{"HelmRelease apps/hr-2", "values: key missing"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("sameErrors:\n%q\nwant\n%q", got, want)
	}
	if got := sameErrors(rows[8:], nil); len(got) != 0 {
		t.Errorf("no errors: %q", got)
	}
}
