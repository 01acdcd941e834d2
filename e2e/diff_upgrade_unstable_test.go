package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffUpgradeUnstable: a chart that renders a random password and a random annotation
// each time shows them as unstable on diff upgrade with the same values, not as drift (exit
// 0); a real value change beside them is still reported (exit 2); --count-unstable counts
// them. The password's value is never printed.
func TestDiffUpgradeUnstable(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	chart := filepath.Join(repoRoot, "testdata/charts/randomapp")
	h.run(t, false, nil, "install", "rnd", chart, "-n", ns)
	rep, out, code := zooDiff(t, "upgrade", "rnd", chart, "-n", ns)
	if code != 0 || rep.Divergences != 0 {
		t.Errorf("same values: exit %d, %d divergences (want 0, the random fields unstable)\n%s", code, rep.Divergences, out)
	}
	unstable := 0
	for _, o := range rep.Objects {
		for _, d := range o.Rows {
			if d.Unstable {
				unstable++
				if d.Class != "DIFFERS" {
					t.Errorf("unstable row %s %s: class %s, want DIFFERS", o.Object, d.Path, d.Class)
				}
			}
		}
	}
	if unstable != 2 {
		t.Errorf("same values: %d unstable rows, want 2 (the password, the render id)\n%s", unstable, out)
	}
	table, _, code := diffBinary(t, "upgrade", "rnd", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 0 || !strings.Contains(table, "unstable") || !strings.Contains(table, "note: 2 unstable fields") {
		t.Errorf("table: exit %d, want 0 with the unstable flag and note\n%s", code, table)
	}

	rep, out, code = zooDiff(t, "upgrade", "rnd", chart, "-n", ns, "--set", "greeting=bonjour")
	greeting := false
	for _, o := range rep.Objects {
		for _, d := range o.Rows {
			greeting = greeting || d.Class == "DIFFERS" && d.Path == "data.greeting" && !d.Unstable
		}
	}
	if code != 2 || rep.Divergences != 1 || !greeting {
		t.Errorf("a real change beside them: exit %d, %d divergences (want 2, 1: data.greeting)\n%s", code, rep.Divergences, out)
	}

	_, _, code = diffBinary(t, "upgrade", "rnd", chart, "-n", ns, "--count-unstable", "--kubeconfig", cluster.Kubeconfig)
	if code != 2 {
		t.Errorf("--count-unstable: exit %d, want 2", code)
	}
	for _, o := range []string{out, table} {
		for _, line := range strings.Split(o, "\n") {
			if strings.Contains(line, "password") && !strings.Contains(line, "(redacted, ") && strings.Contains(line, "DIFFERS") {
				t.Errorf("a password row without redaction: %s", line)
			}
		}
	}
}
