package action

import (
	"fmt"
	"sort"
	"sync"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
)

// Measure is what every diff verb shares: how the cluster is compared.
type Measure struct {
	// Rules leave fields out (--ignore, --ignore-file).
	Rules []flux.IgnoreRule
	// Normalize is diff.Server, diff.Offline or diff.Auto.
	Normalize diff.Mode
	// Workers bounds the requests in flight.
	Workers int
	// Progress, when set, is told after each release of a run over many (RunAll) how many of
	// the total are measured.
	Progress func(done, total int)
	// Views keeps each object's two sides for the line views (-o diff and the pull-request
	// comment); a run over many releases then keeps every report (SummaryRow.Report).
	Views bool
	// Suggest asks each report for the ignore rules that stop drift correction fighting a
	// controller (diff.Report.Suggested); a run over many releases then keeps every report.
	Suggest bool
}

// input is the diff input of in's measurement options.
func (m Measure) input(in diff.Input) diff.Input {
	in.Rules, in.Normalize, in.Workers, in.Views, in.Suggest = m.Rules, m.Normalize, m.Workers, m.Views, m.Suggest
	return in
}

// Summary is the outcome of a run over many releases: one row each, and what could not be
// measured ("NAME: object: error").
type Summary struct {
	Rows       []diff.SummaryRow
	Unmeasured []string
	// Clusters say when and against what each cluster was measured, and why one could not be
	// (set by Fleet.Run, and by the CLI for a run over one cluster).
	Clusters []diff.ClusterRun
}

// summaries measures n releases concurrently (a quarter of m's workers at a time), one summary
// row each (holding its report when m keeps views), telling m's progress (when set) after each
// one. measure(i) returns the report, the row to
// show when it fails (with the error filled in here) and the name its unmeasured objects are
// listed under.
func summaries(n int, m Measure, measure func(i int) (*diff.Report, diff.SummaryRow, string, error)) *Summary {
	s := &Summary{Rows: make([]diff.SummaryRow, n)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	progress := m.Progress
	if progress != nil {
		progress(0, n)
	}
	sem := make(chan struct{}, max(1, m.Workers/4))
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if progress != nil {
				defer func() {
					mu.Lock()
					done++
					progress(done, n)
					mu.Unlock()
				}()
			}
			rep, failed, name, err := measure(i)
			if err != nil {
				failed.Error = err.Error()
				s.Rows[i] = failed
				return
			}
			s.Rows[i] = diff.Summarise(rep)
			if m.Views || m.Suggest {
				s.Rows[i].Report = rep
			}
			for _, obj := range rep.Objects {
				if obj.Error != "" {
					mu.Lock()
					s.Unmeasured = append(s.Unmeasured, fmt.Sprintf("%s: %s: %s", name, obj.Object, obj.Error))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	sort.Strings(s.Unmeasured)
	return s
}
