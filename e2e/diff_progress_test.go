package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDiffProgress: diff release --all draws its progress line (releases measured of the
// total) on stderr when stderr is a terminal, and never in a pipe, with --progress never, or
// in CI; --progress always draws it in a pipe too. The report on stdout is the same in every
// case.
func TestDiffProgress(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	for i := range 3 {
		h.run(t, false, nil, "install", fmt.Sprintf("web-%d", i), "testdata/charts/webapp", "-n", ns, "--set", "headless=true")
	}
	args := []string{"diff", "release", "--all", "-n", ns, "--kubeconfig", cluster.Kubeconfig}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	const line = "releases measured"
	onTerminal := func(t *testing.T, env []string, extra ...string) (stdout, terminal string, code int) {
		t.Helper()
		return onTerminal(t, env, false, append(args, extra...)...)
	}
	out, drawn, code := onTerminal(t, env)
	t.Logf("drawn on the terminal: %q", drawn)
	if code != 0 || !strings.Contains(drawn, line) || !strings.Contains(drawn, "/3") || strings.Contains(out, line) {
		t.Errorf("on a terminal: exit %d, stderr %q, want the progress line (of 3) on stderr only\n%s", code, drawn, out)
	}
	want := unstamped(out)
	if out, drawn, _ := onTerminal(t, env, "--progress", "never"); strings.Contains(drawn, line) || unstamped(out) != want {
		t.Errorf("--progress never on a terminal drew %q", drawn)
	}
	if out, drawn, _ := onTerminal(t, append(env, "CI=true")); strings.Contains(drawn, line) || unstamped(out) != want {
		t.Errorf("in CI on a terminal drew %q", drawn)
	}
	if out, errOut, code := diffBinary(t, args[1:]...); code != 0 || strings.Contains(errOut, line) || unstamped(out) != want {
		t.Errorf("in a pipe: exit %d, stderr %q, want no progress line and the same report", code, errOut)
	}
	if out, errOut, code := diffBinary(t, append(args[1:], "--progress", "always")...); code != 0 || !strings.Contains(errOut, line) || unstamped(out) != want {
		t.Errorf("--progress always in a pipe: exit %d, stderr %q, want the progress line", code, errOut)
	}
	if _, errOut, code := diffBinary(t, append(args[1:], "--progress", "sometimes")...); code != 1 || !strings.Contains(errOut, `--progress "sometimes"`) {
		t.Errorf("--progress sometimes: exit %d, %q; want exit 1 naming the value", code, errOut)
	}
}

// unstamped drops the footer that says when a report was measured: two runs a second apart
// print the same report with two times.
func unstamped(out string) string {
	var keep []string
	for _, l := range strings.SplitAfter(out, "\n") {
		if !strings.HasPrefix(l, "measured ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
