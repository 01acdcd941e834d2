package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffUpgradeDeployFlags: a deploy that needs --set-literal (a value with commas) and
// --skip-schema-validation (a value the chart's schema refuses), with --wait, --timeout and
// --atomic beside them: diff upgrade with the same flags shows 0 divergences on a fresh
// install, and so does the "--" form given the deploy's argument list as it is; without
// --skip-schema-validation the render is refused, as helm upgrade's is.
func TestDiffUpgradeDeployFlags(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	chart := filepath.Join(repoRoot, "testdata/charts/literalapp")
	deploy := []string{"lit", chart, "-n", ns, "--set-literal", "motd=hello, world", "--set", "tier=gold", "--skip-schema-validation",
		"--wait", "--timeout", "2m", "--atomic", "--description", "deploy 42"}
	h.run(t, false, nil, append([]string{"upgrade", "--install"}, deploy...)...)

	rep, out, code := zooDiff(t, append([]string{"upgrade"}, deploy...)...)
	if code != 0 || rep.Divergences != 0 || rep.Compared == 0 {
		t.Errorf("diff upgrade with the deploy's flags: exit %d, %d divergences across %d fields\n%s", code, rep.Divergences, rep.Compared, out)
	}
	table, errOut, code := diffBinary(t, append([]string{"upgrade", "--kubeconfig", cluster.Kubeconfig, "--"}, deploy...)...)
	if code != 0 || !strings.Contains(table, "0 divergences across") {
		t.Errorf("diff upgrade -- <the deploy's arguments>: exit %d\n%s%s", code, table, errOut)
	}
	// Without --skip-schema-validation, as without it helm upgrade refuses the values.
	var strict []string
	for _, a := range deploy {
		if a != "--skip-schema-validation" {
			strict = append(strict, a)
		}
	}
	_, errOut, code = diffBinary(t, append([]string{"upgrade", "--kubeconfig", cluster.Kubeconfig, "--"}, strict...)...)
	if code != 1 || !strings.Contains(errOut, "tier") {
		t.Errorf("without --skip-schema-validation: exit %d, want 1 naming the schema violation\n%s", code, errOut)
	}
	// --set in place of --set-literal splits the value at its comma: the render differs.
	var loose []string
	for _, a := range deploy {
		loose = append(loose, strings.Replace(a, "--set-literal", "--set", 1))
	}
	_, _, code = diffBinary(t, append([]string{"upgrade", "--kubeconfig", cluster.Kubeconfig, "--"}, loose...)...)
	if code == 0 {
		t.Errorf("--set for a value with a comma: exit 0, want a different render (--set-literal matters)")
	}
}
