package action

import (
	"fmt"
	"sort"
	"sync"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// Measure is what every diff verb shares: how the cluster is compared (diff.Options: the
// ignore rules, the normalisation, the requests in flight, the views and suggestions kept; a run
// over many releases keeps every report when Views or Suggest asks), and the progress of a run
// over many.
type Measure struct {
	diff.Options
	// Progress, when set, is told after each release of a run over many (RunAll) how many of
	// the total are measured.
	Progress func(done, total int)
	// Each, when set, is given each row of a run over many, with its Report, in the
	// summary's order, as soon as it and every row before it are measured (one call at a
	// time); the summary then keeps the row without its Report, so that a run over many
	// releases does not hold every report until the last is measured.
	Each func(row diff.SummaryRow)
}

// input is in with the measurement's options.
func (m Measure) input(in diff.Input) diff.Input {
	in.Options = m.Options
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
		wg    sync.WaitGroup
		mu    sync.Mutex
		done  int
		ready = make([]bool, n)
		next  int // the first row not yet given to m.Each
	)
	// hand gives m.Each the rows measured so far that nothing before them still waits for.
	hand := func(i int) {
		if m.Each == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		ready[i] = true
		for ; next < n && ready[next]; next++ {
			m.Each(s.Rows[next])
			s.Rows[next].Report = nil
		}
	}
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
				hand(i)
				return
			}
			defer hand(i)
			s.Rows[i] = diff.Summarise(rep)
			if m.Views || m.Suggest || m.Each != nil {
				s.Rows[i].Report = rep // Each is given it; the summary keeps it with views only
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
