package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The planted secret values: distinctive, each of a length (72, 69) that no other output of
// these short runs contains as a number.
const (
	markerData   = "SECRET-DATA-MARKER-9c1e5b7a-3f2d-4e8a-b6c0-1d2e3f4a5b6c-0123456789abcdef"
	markerValues = "SECRET-VALUES-MARKER-77aa-88bb-99cc-ddee-ff00-1122-3344-5566-7788-99a"
)

// TestSecretsNeverLeak plants marker values in Secret data and stringData, in an env value
// taken from a Secret, in a Secret-backed valuesFrom, and in a last-applied-configuration
// annotation on a live Secret, then runs render, owners and self in their output modes and
// error paths, and asserts that no marker, nor its length, appears on stderr (render's stdout
// is the user's own stream and holds the Secret by design) or, for owners and self, on stdout.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	if len(markerData) != 72 || len(markerValues) != 69 {
		t.Fatalf("marker lengths changed: %d %d", len(markerData), len(markerValues))
	}
	ns := cluster.Namespace(t)
	ctx := context.Background()
	lastApplied := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"stringData":{"password":%q}}`, markerData)
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied}},
		Data:       map[string][]byte{"password": []byte(markerData), "values.yaml": []byte("token: " + markerValues + "\nshared:\n  enabled: true\n")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(markerData))
	stream := fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: %[1]s
data:
  password: %[2]s
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: %[1]s
stringData:
  password: %[3]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
spec:
  template:
    spec:
      containers:
        - name: web
          image: web:1
          env:
            - name: PASSWORD
              value: %[3]s
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: deep-b
  namespace: %[1]s
spec:
  interval: 1h
  chart:
    spec:
      chart: deep-b
      sourceRef: {kind: HelmRepository, name: charts}
  valuesFrom:
    - kind: Secret
      name: creds
`, ns, b64, markerData)
	chartDir := filepath.Join(repoRoot, "testdata/charts/deep-b")
	kube := []string{"--kubeconfig=" + cluster.Kubeconfig, "--namespace=" + ns, "--release=platform"}
	type run struct {
		args        []string
		checkStdout bool
	}
	runs := []run{
		{[]string{"render"}, false},
		{[]string{"render", "--verbose", "--owners=warn", "--drift-detection=deep-b=enabled"}, false},
		{[]string{"render", "--owners=warn", "--cluster", "--deep", "--chart-dir=deep-b=" + chartDir}, false},
		{[]string{"render", "--cluster", "--deep", "--chart-dir=deep-b=" + chartDir, "--verbose"}, false},
		{[]string{"render", "--deep"}, false}, // error path: the HelmRepository cannot be found
		{[]string{"owners"}, true},
		{[]string{"owners", "-o", "json"}, true},
		{[]string{"owners", "--cluster", "-o", "json"}, true},
		{[]string{"owners", "--cluster", "--deep", "--chart-dir=deep-b=" + chartDir}, true},
		{[]string{"owners", "--cluster", "--deep", "--chart-dir=deep-b=" + chartDir, "-o", "json"}, true},
		{[]string{"owners", "--deep", "--chart-dir=deep-b=" + filepath.Join(repoRoot, "testdata/charts/deep-a")}, true},
		{[]string{"self", "status", "creds"}, true},
		{[]string{"self", "resume", "creds", "--timeout=1s"}, true},
		{[]string{"self", "handback", "creds"}, true},
	}
	leaks := regexp.MustCompile(`SECRET-|` + regexp.QuoteMeta(b64) + `|\b` + strconv.Itoa(len(markerData)) + `\b|\b` + strconv.Itoa(len(markerValues)) + `\b`)
	for _, r := range runs {
		args := append(append([]string{}, r.args...), kube...)
		if r.args[0] == "self" {
			args = append(append([]string{}, r.args...), "--kubeconfig="+cluster.Kubeconfig, "-n", ns)
		}
		stdout, stderr, code := helmDrift(stream, args...)
		name := strings.Join(r.args, " ")
		if m := leaks.FindString(stderr); m != "" {
			t.Errorf("%s (exit %d): stderr leaks %q:\n%s", name, code, m, stderr)
		}
		if r.checkStdout {
			if m := leaks.FindString(stdout); m != "" {
				t.Errorf("%s (exit %d): stdout leaks %q:\n%s", name, code, m, stdout)
			}
		}
		if len(stderr)+len(stdout) == 0 {
			t.Errorf("%s: printed nothing at all (the check would prove nothing)", name)
		}
	}
}

// TestDiffSecretsNeverLeak: Secrets installed with the real helm CLI, then edited by hand (a
// changed value, a live-only key, a last-applied-configuration annotation holding the data), a
// Secret env source shadowed by an inline entry, and an upgrade whose Secret the API server
// refuses as Invalid: diff upgrade and diff release, in every output mode and normalisation,
// --all, --stats and the error paths, never print a marker, its base64, nor its length other
// than as the size of a redacted value.
func TestDiffSecretsNeverLeak(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	chart := filepath.Join(repoRoot, "testdata/charts/secretapp")
	h.run(t, false, nil, "install", "app", chart, "-n", ns, "--set", "password="+markerData, "--set", "token="+markerValues)

	edited := strings.Replace(markerData, "DATA", "EDIT", 1)
	lastApplied := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","stringData":{"password":%q}}`, markerData)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":%q,"note":%q}},"stringData":{"password":%q,"extra":%q}}`,
		lastApplied, markerValues, edited, markerValues)
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Patch(ctx, "app-data", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kube.CoreV1().Secrets(ns).Patch(ctx, "app-string", types.MergePatchType, []byte(`{"stringData":{"TOKEN":"`+edited+`"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	var leakParts []string
	for _, m := range []string{markerData, markerValues, edited} {
		leakParts = append(leakParts, regexp.QuoteMeta(m), regexp.QuoteMeta(base64.StdEncoding.EncodeToString([]byte(m))), `\b`+strconv.Itoa(len(m))+`\b`)
	}
	leaks := regexp.MustCompile(`SECRET-|` + strings.Join(leakParts, "|"))
	// The one form a value's length may take: its size, said as such ("(redacted, 72 bytes ->
	// 69 bytes)", "chartBytes": 72), so that a changed key shows as changed. Anything else that
	// says the length is a leak.
	sizes := regexp.MustCompile(`\(redacted, \d+ bytes?( -> \d+ bytes?)?(, differs)?\)|"?(chart|cluster)Bytes"?: \d+`)
	sized := 0
	kube := []string{"-n", ns, "--kubeconfig", cluster.Kubeconfig}
	upgrade := append([]string{"upgrade", "app", chart, "--set", "password=" + markerData, "--set", "token=" + markerValues}, kube...)
	release := append([]string{"release", "app"}, kube...)
	runs := 0
	check := func(args []string, wantCode int) {
		t.Helper()
		out, errOut, code := diffBinary(t, args...)
		runs++
		sized += len(sizes.FindAllString(out, -1))
		if m := leaks.FindString(sizes.ReplaceAllString(out+errOut, "(size)")); m != "" {
			t.Errorf("diff %s (exit %d) leaks %q:\n%s%s", strings.Join(args, " "), code, m, out, errOut)
		}
		if code != wantCode {
			t.Errorf("diff %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
	}
	for _, base := range [][]string{upgrade, release} {
		for _, format := range []string{"table", "json", "yaml", "markdown", "counts", "diff", "github", "gitlab"} {
			for _, mode := range []string{"offline", "server"} {
				check(append(append([]string{}, base...), "-o", format, "--normalize", mode, "--stats"), 2)
			}
		}
	}
	for _, format := range []string{"table", "json", "yaml", "markdown", "counts", "diff", "github"} {
		check(append([]string{"release", "--all", "-o", format}, kube...), 2)
	}
	if sized == 0 {
		t.Errorf("no output gave a changed Secret value's size")
	}
	// Error paths: the API server refuses the new render's pull Secret as Invalid, quoting what
	// it can; a values file that does not parse; a release that does not exist.
	bad := append(append([]string{}, upgrade...), "--set", "dockerconfig=not-json-"+markerValues, "--normalize", "server")
	check(bad, 3)
	badValues := filepath.Join(t.TempDir(), "values.yaml")
	os.WriteFile(badValues, []byte("password: ["+markerData+"\n"), 0o644)
	check(append(append([]string{}, upgrade...), "-f", badValues), 1)
	check(append([]string{"release", "nope"}, kube...), 1)
	t.Logf("%d diff runs checked for leaks", runs)
}
