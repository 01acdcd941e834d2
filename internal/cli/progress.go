package cli

import (
	"fmt"
	"io"
	"os"
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

// progressLine draws the progress of a run over many releases on w, a line redrawn in place
// (releases measured of the total, elapsed, estimate), when mode says so: always, or auto
// when w is a terminal and the run is not in CI. It returns the callback to give the run and
// the function that clears the line once the run is done; both do nothing when no line is
// drawn. update is called by one goroutine at a time.
func progressLine(mode string, w io.Writer, what string) (update func(done, total int), finish func()) {
	if !drawProgress(mode, w) {
		return nil, func() {}
	}
	var (
		bar  *progressbar.ProgressBar
		done bool
	)
	finish = func() {
		if bar != nil && !done {
			done = true
			bar.Finish() // cleared: the report follows
		}
	}
	update = func(measured, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(what),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
			bar.RenderBlank()
		}
		bar.Set(measured)
		if measured >= total {
			finish()
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
