package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// The --progress modes.
const (
	progressAuto   = "auto"
	progressAlways = "always"
	progressNever  = "never"
)

// now is the clock of the reports' stamps (a test sets its own).
var now = time.Now

// progressLine draws the progress of a run over many releases on w, a line redrawn in place
// (releases measured of the total, elapsed, estimate; with several clusters, each cluster's
// count), when mode says so: always, or auto when w is a terminal and the run is not in CI. It
// returns the callback to give the run, told per cluster ("" for a run over one) how many of
// its releases are measured, and the function that clears the line once the run is done; both
// do nothing when no line is drawn (update is then nil). update may be called concurrently.
func progressLine(mode string, w io.Writer, what string) (update func(cluster string, done, total int), finish func()) {
	if !drawProgress(mode, w) {
		return nil, func() {}
	}
	var (
		mu       sync.Mutex
		bar      *progressbar.ProgressBar
		finished bool
		clusters []string // in the order they first told
		counts   = map[string][2]int{}
	)
	finish = func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil && !finished {
			finished = true
			bar.Finish() // cleared: the report follows
		}
	}
	update = func(cluster string, measured, total int) {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		if _, ok := counts[cluster]; !ok {
			clusters = append(clusters, cluster)
		}
		counts[cluster] = [2]int{measured, total}
		done, all := 0, 0
		var each []string
		for _, c := range clusters {
			done, all = done+counts[c][0], all+counts[c][1]
			each = append(each, fmt.Sprintf("%s %d/%d", c, counts[c][0], counts[c][1]))
		}
		description := what
		if len(clusters) > 1 || cluster != "" {
			description += " (" + strings.Join(each, ", ") + ")"
		}
		if bar == nil {
			bar = progressbar.NewOptions(all,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(description),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
			bar.RenderBlank()
		}
		if all != bar.GetMax() {
			bar.ChangeMax(all)
		}
		bar.Describe(description)
		bar.Set(done)
		if cluster == "" && done >= all {
			finished = true
			bar.Finish() // one cluster, all measured: cleared before the summary is printed
		}
	}
	return update, finish
}

// drawProgress says whether mode draws a progress line on w.
func drawProgress(mode string, w io.Writer) bool {
	switch mode {
	case progressAlways:
		return true
	case progressNever:
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("CI") == "" && os.Getenv("TERM") != "dumb"
}

// validProgress checks a --progress value.
func validProgress(mode string) error {
	switch mode {
	case progressAuto, progressAlways, progressNever:
		return nil
	}
	return fmt.Errorf("--progress %q: want auto (on a terminal, not in CI), always or never", mode)
}
