package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffUpgradePostRendererPlugin: under Helm 4, --post-renderer takes the name of a
// postrenderer/v1 plugin. A release installed through such a plugin (one that rewrites a value)
// shows 0 divergences in diff upgrade --post-renderer NAME, resolved as Helm 4 resolves it, and
// the rewritten value as DIFFERS without it.
func TestDiffUpgradePostRendererPlugin(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	dir := filepath.Join(t.TempDir(), "shout")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plugin := "apiVersion: v1\ntype: postrenderer/v1\nname: shout\nversion: 0.0.1\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: sed\n      args: [\"-e\", \"s/greeting: \\\"hello\\\"/greeting: \\\"HELLO\\\"/\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(plugin), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(t, false, nil, "plugin", "install", dir)
	chart := filepath.Join(repoRoot, "testdata/charts/selfapp")
	h.run(t, false, nil, "install", "pr", chart, "-n", ns, "--post-renderer", "shout")

	diffWith := func(args ...string) (map[string]any, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), append([]string{"diff", "upgrade", "pr", chart, "-n", ns, "-o", "json", "--kubeconfig", cluster.Kubeconfig}, args...)...)
		cmd.Env = h.env // Helm 4's plugin directory, as helm would pass it to a plugin
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			t.Logf("stderr: %s", ee.Stderr)
		}
		var rep map[string]any
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("diff %v: exit %d, %v\n%s", args, code, err, out)
		}
		return rep, code
	}
	rep, code := diffWith("--post-renderer", "shout")
	if code != 0 || rep["divergences"] != float64(0) {
		t.Errorf("--post-renderer shout (a Helm 4 plugin): exit %d, %v divergences, want 0", code, rep["divergences"])
	}
	if !strings.Contains(rep["engine"].(string), "Helm 4") {
		t.Errorf("engine %q, want the Helm 4 SDK for a release Helm 4 wrote", rep["engine"])
	}
	rep, code = diffWith()
	if b, _ := json.Marshal(rep); code != 2 || !strings.Contains(string(b), `"path":"data.greeting"`) {
		t.Errorf("without the post-renderer: exit %d, want 2 with data.greeting DIFFERS\n%s", code, b)
	}
	// The same name under the Helm 3 engine resolves the same plugin.
	rep, code = diffWith("--post-renderer", "shout", "--engine", "helm3")
	if code != 0 || rep["divergences"] != float64(0) {
		t.Errorf("--post-renderer shout --engine helm3: exit %d, %v divergences, want 0", code, rep["divergences"])
	}
}
