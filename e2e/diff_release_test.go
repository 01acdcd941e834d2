package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// hasRow reports whether one line of out contains every part.
func hasRow(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func diffBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return helmDrift("", append([]string{"diff"}, args...)...)
}

// TestDiffRelease: a freshly installed chart shows zero divergences (defaults and tool marks
// are not drift); then real edits show up in the right class, a deleted object is CHART-ONLY,
// a Secret's change is reported without its value, and the exit code says drift.
func TestDiffRelease(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	const marker = "DIFF-SECRET-MARKER-4d2c"
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "password="+marker)
	kube := []string{"release", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig}

	out, errOut, code := diffBinary(t, kube...)
	if code != 0 || !strings.Contains(out, "0 divergences across") {
		t.Fatalf("fresh install: exit %d\n%s%s", code, out, errOut)
	}

	ctx := context.Background()
	// An inline LOG_LEVEL that agrees with the envFrom ConfigMap's is reported, not counted.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"LOG_LEVEL","value":"info"}]}]}}}}`
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _, _ = diffBinary(t, kube...)
	if !hasRow(out, "SHADOWS", "containers[name=web].env[name=LOG_LEVEL]", "hides ConfigMap web-settings: values agree") || !strings.Contains(out, "1 divergences across") {
		t.Errorf("an agreeing shadow (and the inline entry as one CLUSTER-ONLY row):\n%s", out)
	}
	patch = `{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28","env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"EXTRA","value":"x"}]}]}}}}`
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _, _ = diffBinary(t, kube...)
	if !hasRow(out, "SHADOWS", "env[name=LOG_LEVEL]", "hides ConfigMap web-settings: values differ") {
		t.Errorf("a disagreeing shadow:\n%s", out)
	}
	if err := cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "web-settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Patch(ctx, "web-creds", types.MergePatchType, []byte(`{"stringData":{"password":"`+marker+`-edited"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = diffBinary(t, kube...)
	if code != 2 {
		t.Errorf("after edits: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, want := range [][]string{
		{"ConfigMap " + ns + "/web-settings", "CHART-ONLY", "(whole object)"},
		{"DIFFERS", "spec.replicas", "2", "3"},
		{"CLUSTER-ONLY", "containers[name=web].env[name=EXTRA]", "EXTRA"},
		{"DIFFERS", "containers[name=web].image", "nginx:1.27", "nginx:1.28"},
		{"DIFFERS", "data.password", "(redacted, "},
		{"6 divergences across"}, // each env entry added is one row
	} {
		if !hasRow(out, want...) {
			t.Errorf("table lacks a row with %q:\n%s", want, out)
		}
	}
	js, _, code := diffBinary(t, append(kube, "-o", "json")...)
	var rep struct {
		Divergences int `json:"divergences"`
		Objects     []struct {
			Object      string `json:"object"`
			Divergences []struct {
				Class, Pointer string
				Redacted       bool
			} `json:"divergences"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil || code != 2 || rep.Divergences != 6 {
		t.Errorf("json: exit %d, %v, %d divergences\n%s", code, err, rep.Divergences, js)
	}
	for _, o := range []string{out, js, errOut} {
		if strings.Contains(o, marker) || strings.Contains(o, "RElGRi1TRUNSRVQtTUFSS0VS") {
			t.Errorf("a Secret's value leaked:\n%s", o)
		}
	}

	// Ignore rules in Flux syntax: a flag, and a file with a target.
	out, _, _ = diffBinary(t, append(kube, "--ignore", "/spec/replicas")...)
	if hasRow(out, "DIFFERS", "spec.replicas") || !strings.Contains(out, "5 divergences across") {
		t.Errorf("--ignore /spec/replicas:\n%s", out)
	}
	ignoreFile := filepath.Join(t.TempDir(), "ignore.yaml")
	os.WriteFile(ignoreFile, []byte("- paths: [/spec/template/spec/containers/0/image]\n  target: {kind: Deployment, name: web}\n- paths: [/data]\n  target: {kind: StatefulSet}\n"), 0o644)
	out, _, _ = diffBinary(t, append(kube, "--ignore-file", ignoreFile)...)
	if hasRow(out, "DIFFERS", "containers[name=web].image") || !hasRow(out, "DIFFERS", "data.password") {
		t.Errorf("--ignore-file with targets:\n%s", out)
	}

	// An unreachable cluster is "could not measure", never clean.
	_, errOut, code = diffBinary(t, "release", "web", "-n", ns, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if code != 3 || !strings.Contains(errOut, "could not measure") {
		t.Errorf("unreachable: exit %d\n%s", code, errOut)
	}
}

// TestDiffHelmReleaseIgnore: for a release a Flux HelmRelease manages, diff applies that
// HelmRelease's own spec.driftDetection.ignore rules (here set by the post-renderer's config).
func TestDiffHelmReleaseIgnore(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	h.installPlugins(t)
	pushComponent(t, h)
	ns := cluster.Namespace(t)
	config := filepath.Join(t.TempDir(), "helm-drift.yaml")
	os.WriteFile(config, []byte("apiVersion: helm-drift/v1\nkind: Config\ndriftDetection:\n  - selector: component\n    mode: enabled\n    ignore:\n      - paths: [/data/greeting]\n        target: {kind: ConfigMap}\n"), 0o644)
	h.run(t, false, nil, append([]string{"install", "umbrella", "testdata/charts/umbrella", "-n", ns, "--set", "registry=" + cluster.Registry,
		"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"},
		postRendererArgs("--config="+config, "--namespace="+ns)...)...)
	ctx := context.Background()
	testenv.Eventually(t, 3*time.Minute, "helm-controller installs the component", func() (bool, string) {
		_, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "component-settings", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Patch(ctx, "component-settings", types.MergePatchType, []byte(`{"data":{"greeting":"edited"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	js, errOut, code := diffBinary(t, "release", "component", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "-o", "json")
	var rep struct {
		HelmRelease string `json:"helmRelease"`
		Divergences int    `json:"divergences"`
		Objects     []struct {
			Object  string `json:"object"`
			Ignored int    `json:"ignored"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, js, errOut)
	}
	if code != 0 || rep.HelmRelease != ns+"/component" || rep.Divergences != 0 {
		t.Errorf("exit %d, helmRelease %q, %d divergences:\n%s%s", code, rep.HelmRelease, rep.Divergences, js, errOut)
	}
	ignored := 0
	for _, o := range rep.Objects {
		ignored += o.Ignored
	}
	if ignored != 1 {
		t.Errorf("%d divergences ignored, want 1 (data.greeting):\n%s", ignored, js)
	}
}

// TestDiffColour: the table is coloured on a terminal (run under script(1) for a pty), and not
// with NO_COLOR set, nor into a pipe.
func TestDiffColour(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no pty to test colour with")
	}
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns)
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	command := fmt.Sprintf("%s diff release web -n %s --kubeconfig %s", filepath.Join(pluginCopy, "bin/helm-drift"), ns, cluster.Kubeconfig)
	onTTY := func(env ...string) string {
		cmd := exec.Command(script, "-qec", command, "/dev/null")
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.Output()
		return string(out)
	}
	if out := onTTY(); !strings.Contains(out, "\x1b[33mDIFFERS\x1b[0m") {
		t.Errorf("on a terminal: no colour:\n%q", out)
	}
	if out := onTTY("NO_COLOR=1"); strings.Contains(out, "\x1b[") || !strings.Contains(out, "DIFFERS") {
		t.Errorf("NO_COLOR=1 on a terminal:\n%q", out)
	}
	if out, _, _ := diffBinary(t, "release", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig); strings.Contains(out, "\x1b[") {
		t.Errorf("into a pipe: colour:\n%q", out)
	}
}
