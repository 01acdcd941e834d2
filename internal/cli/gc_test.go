package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestCollectFor: a run over one release collects at shortRunGC, one over many at Go's
// default, and GOGC, when set, is left to decide.
func TestCollectFor(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	if v, set := os.LookupEnv("GOGC"); set {
		defer os.Setenv("GOGC", v)
	} else {
		defer os.Unsetenv("GOGC")
	}
	for _, tc := range []struct {
		name string
		gogc string // "" for unset
		many bool
		want int
	}{
		{"one release", "", false, shortRunGC},
		{"a fleet", "", true, 100},
		{"GOGC set", "50", false, 75},
		{"GOGC set, a fleet", "50", true, 75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Unsetenv("GOGC")
			if tc.gogc != "" {
				os.Setenv("GOGC", tc.gogc)
			}
			debug.SetGCPercent(75) // what GOGC's value would have set at start
			collectFor(tc.many)
			if got := debug.SetGCPercent(75); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
