package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDiffView: -o diff of a real release after the mutation matrix (scaled, an env entry
// applied by another manager, a ConfigMap deleted, an annotation added, a Secret's key
// changed): the hunks and their verdicts; colour on a terminal only, NO_COLOR winning over auto
// and --color always winning over NO_COLOR; HELM_DRIFT_EXTERNAL_DIFF running the real dyff and
// diff -u on the two trees, their exit codes passed through; no Secret value anywhere, the
// trees included.
func TestDiffView(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	const marker = "VIEW-SECRET-MARKER-77e1"
	const changed = "VIEW-CHANGED-SECRET-9a0b"
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "password="+marker)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"}))
	must(cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
		"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"INJECTED_BY_SIDECAR","value":"1"}]}]}}}}`), metav1.PatchOptions{FieldManager: "sidecar-injector"}))
	must(nil, cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "web-settings", metav1.DeleteOptions{}))
	must(cluster.Kube.CoreV1().Services(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"edited-by":"hand"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"}))
	must(cluster.Kube.CoreV1().Secrets(ns).Patch(ctx, "web-creds", types.MergePatchType, []byte(`{"stringData":{"password":"`+changed+`"}}`), metav1.PatchOptions{FieldManager: "kubectl-patch"}))

	args := []string{"diff", "release", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "-o", "diff"}
	secrets := []string{marker, changed, base64.StdEncoding.EncodeToString([]byte(marker)), base64.StdEncoding.EncodeToString([]byte(changed))}
	noSecret := func(t *testing.T, what, s string) {
		t.Helper()
		for _, v := range secrets {
			if strings.Contains(s, v) {
				t.Errorf("%s holds a Secret's value %q", what, v)
			}
		}
	}

	out, errOut, code := helmDrift("", args...)
	if code != 2 {
		t.Fatalf("-o diff: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, w := range []string{
		"# Deployment.apps " + ns + "/web: DIFFERS 1, CLUSTER-ONLY 1",
		"# DIFFERS spec.replicas: upgrade: yes: resets it to the chart's value",
		"-  replicas: 5\n+  replicas: 2\n",
		"# CLUSTER-ONLY spec.template.spec.containers[name=web].env[name=INJECTED_BY_SIDECAR]",
		"(set by sidecar-injector)",
		"-        - name: INJECTED_BY_SIDECAR\n",
		"# ConfigMap " + ns + "/web-settings: CHART-ONLY 1\n",
		"--- /dev/null\n+++ chart\n",
		"# CLUSTER-ONLY metadata.annotations.edited-by",
		"-    edited-by: hand\n",
		"# DIFFERS data.password (redacted, " + strconv.Itoa(len(changed)) + " bytes -> " + strconv.Itoa(len(marker)) + " bytes)",
		"-  password: (redacted, " + strconv.Itoa(len(changed)) + " bytes)\n+  password: (redacted, " + strconv.Itoa(len(marker)) + " bytes, differs)\n",
		"release " + ns + "/web revision 1",
		`measured `,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("-o diff lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("-o diff in a pipe is coloured")
	}
	// --all over the namespace's one release: the same block, and still the footer.
	all, _, code := helmDrift("", "diff", "release", "--all", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "-o", "diff")
	if code != 2 || unstamped(all) != unstamped(out) || !strings.Contains(all, "\nmeasured ") {
		t.Errorf("--all -o diff over one release: exit %d, want the single report's diff with its footer:\n%s", code, all)
	}
	noSecret(t, "-o diff", out+errOut)
	for _, o := range []string{"table", "json", "yaml", "markdown"} {
		out, _, _ := helmDrift("", "diff", "release", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "-o", o)
		noSecret(t, "-o "+o, out)
		if o == "table" && !strings.Contains(out, "(redacted, "+strconv.Itoa(len(marker))+" bytes)") {
			t.Errorf("the table does not give the Secret value's size:\n%s", out)
		}
	}

	// Colour: on a terminal only, NO_COLOR turns auto off, an explicit --color always wins.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}
	onTerminal := func(t *testing.T, env []string, extra ...string) string {
		t.Helper()
		_, drawn, _ := onTerminal(t, env, true, append(args, extra...)...)
		return drawn
	}
	const red, green = "\x1b[31m-  replicas: 5\x1b[0m", "\x1b[32m+  replicas: 2\x1b[0m"
	if s := onTerminal(t, env); !strings.Contains(s, red) || !strings.Contains(s, green) {
		t.Errorf("-o diff on a terminal is not coloured:\n%q", s)
	}
	if s := onTerminal(t, append(env, "NO_COLOR=1")); strings.Contains(s, "\x1b[") {
		t.Errorf("NO_COLOR=1 on a terminal still coloured")
	}
	if s := onTerminal(t, env, "--color", "never"); strings.Contains(s, "\x1b[") {
		t.Errorf("--color never on a terminal still coloured")
	}
	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), append(args, "--color", "always")...)
	cmd.Env = append(env, "NO_COLOR=1")
	piped, _ := cmd.Output()
	if !strings.Contains(string(piped), red) {
		t.Errorf("--color always with NO_COLOR=1 in a pipe is not coloured")
	}

	// External programs on the two trees.
	withDiff := func(t *testing.T, program string, extra ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), append(args, extra...)...)
		cmd.Env = append(env, "HELM_DRIFT_EXTERNAL_DIFF="+program)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		noSecret(t, program, stdout.String()+stderr.String())
		return stdout.String(), code
	}
	dyff := filepath.Join(filepath.Dir(cluster.HelmBin("helm3")), "dyff")
	if _, err := os.Stat(dyff); err != nil {
		t.Fatalf("dyff is not built: run scripts/tools.sh (%v)", err)
	}
	if out, code := withDiff(t, dyff+" between --omit-header --set-exit-code"); code != 1 ||
		!strings.Contains(out, "spec.replicas") || !strings.Contains(out, "INJECTED_BY_SIDECAR") || !strings.Contains(out, "(redacted, ") {
		t.Errorf("dyff between: exit %d, want 1 and the changes:\n%s", code, out)
	}
	if out, code := withDiff(t, "diff -u -N"); code != 1 || !strings.Contains(out, "-  replicas: 5") || !strings.Contains(out, "apps.v1.Deployment."+ns+".web") {
		t.Errorf("diff -u -N: exit %d, want 1 and the replicas hunk:\n%s", code, out)
	}
	// A program that keeps the trees (to read them) and exits 7: the code passes through.
	kept := t.TempDir()
	script := filepath.Join(kept, "keep.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncp -r \"$1\" \""+kept+"/live\" && cp -r \"$2\" \""+kept+"/chart\"\nexit 7\n"), 0o755)
	if _, code := withDiff(t, script); code != 7 {
		t.Errorf("the program's exit 7 came back as %d", code)
	}
	files := 0
	filepath.Walk(kept, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && path != script {
			files++
			b, _ := os.ReadFile(path)
			noSecret(t, "tree file "+path, string(b))
		}
		return nil
	})
	if files != 7 { // live: Deployment, Service, Secret; chart: those and the deleted ConfigMap
		t.Errorf("%d files in the trees, want 7", files)
	}
	if out, code := withDiff(t, "", "--context", "-2"); code != 1 || out != "" {
		t.Errorf("--context -2: exit %d, want 1 and nothing on stdout", code)
	}
}
