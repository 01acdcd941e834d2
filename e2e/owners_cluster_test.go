package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOwnersCluster: an object installed by release a with the real helm CLI; then
// `helm install b` of a chart rendering it fails in the post-renderer with our message, naming
// both releases, before Helm's own "cannot be imported" error — under Helm 3 and Helm 4.
func TestOwnersCluster(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			t.Parallel()
			h := clusterHelm(t, helmName)
			h.installPlugins(t)
			ns := cluster.Namespace(t)
			chart := "testdata/charts/claimant"
			h.run(t, false, nil, "install", "a", chart, "-n", ns)

			// Without the check, Helm fails late with its own error.
			_, plain := h.run(t, true, nil, "install", "b", chart, "-n", ns)
			if !strings.Contains(plain, "cannot be imported into the current release") {
				t.Fatalf("Helm's own error was expected without the check:\n%s", plain)
			}

			args := []string{"install", "b2", chart, "-n", ns}
			rules := []string{"--cluster", "--release=b2", "--namespace=" + ns}
			if helmName == "helm3" {
				args = append(args, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render")
			} else {
				args = append(args, "--post-renderer", "drift-render")
			}
			out, errOut := h.run(t, true, nil, append(args, postRendererArgs(rules...)...)...)
			for _, want := range []string{
				"owned-by-another-release: ConfigMap " + ns + "/shared",
				"rendered by release " + ns + "/b2",
				"already belongs to release " + ns + "/a",
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if strings.Contains(errOut, "cannot be imported into the current release: invalid ownership") {
				t.Errorf("Helm got as far as its own import check: the post-renderer should have failed first:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
		})
	}
}

// TestOwnersClusterUnreachable: with --cluster and a dead API server the render fails and says
// it could not check; it is never clean.
func TestOwnersClusterUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	kc := tokenKubeconfig(t, "https://127.0.0.1:1", "unused")
	in := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	out, errOut := renderBinary(t, true, in, "--cluster", "--release=r", "--kubeconfig="+kc, "--request-timeout=2s")
	if out != "" || !strings.Contains(errOut, "could not check the cluster") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

// TestOwnersDeep: two HelmReleases whose charts, pushed to the test registry, both render one
// custom resource: `render --owners error --deep` fails before Helm applies anything and names
// both releases and the object. Sources come from the stream; deep-b's switch comes from a
// valuesFrom ConfigMap read from the cluster (--cluster).
func TestOwnersDeep(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	dir := t.TempDir()
	for _, c := range []string{"deep-a", "deep-b"} {
		h.run(t, false, nil, "package", "testdata/charts/"+c, "-d", dir)
		h.run(t, false, nil, "push", filepath.Join(dir, c+"-1.0.0.tgz"), "oci://"+cluster.Registry+"/deep", "--plain-http")
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "b-values"}, Data: map[string]string{"values.yaml": "shared:\n  enabled: true\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var stream strings.Builder
	for _, c := range []string{"deep-a", "deep-b"} {
		fmt.Fprintf(&stream, `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  interval: 1h
  url: oci://%[3]s/deep/%[1]s
  insecure: true
  ref:
    semver: ">=1.0.0 <2.0.0"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: %[1]s
`, c, ns, cluster.Registry)
	}
	stream.WriteString("  valuesFrom:\n    - kind: ConfigMap\n      name: b-values\n")
	out, errOut := renderBinary(t, true, []byte(stream.String()), "--deep", "--cluster", "--release=platform", "--namespace="+ns, "--kubeconfig="+cluster.Kubeconfig)
	for _, want := range []string{
		"rendered-by-two-releases: HelmRepository.source.toolkit.fluxcd.io " + ns + "/shared is rendered by HelmRelease " + ns + "/deep-a",
		"and HelmRelease " + ns + "/deep-b",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out != "" {
		t.Errorf("stdout: %q", out)
	}
	// Without deep-b's values it renders no HelmRepository: the same stream passes.
	clean := strings.Replace(stream.String(), "  valuesFrom:\n    - kind: ConfigMap\n      name: b-values\n", "", 1)
	out, _ = renderBinary(t, false, []byte(clean), "--deep", "--cluster", "--release=platform", "--namespace="+ns, "--kubeconfig="+cluster.Kubeconfig)
	if out != clean {
		t.Errorf("a clean stream did not come back unchanged")
	}
}

// TestOwnersClusterKept: an object marked helm.sh/resource-policy: keep, rendered by a second
// release, is owned by the first while that one is installed (moving it away would break it),
// and kept by an older release once that one is uninstalled (moving it over is the advice).
func TestOwnersClusterKept(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	chart := "testdata/charts/keeper"
	h.run(t, false, nil, "install", "a", chart, "-n", ns)
	stream, _ := h.run(t, false, nil, "template", "b", chart, "-n", ns)
	check := func() string {
		t.Helper()
		out, errOut, code := helmDrift(stream, "render", "--cluster", "--release", "b", "--namespace", ns, "--kubeconfig", cluster.Kubeconfig)
		if code == 0 || out != "" {
			t.Fatalf("render --cluster of a second owner: exit %d, stdout %q; want a failure and nothing on stdout", code, out)
		}
		return errOut
	}
	object := "ConfigMap " + ns + "/shared-settings"
	if got := check(); !strings.Contains(got, "owned-by-another-release: "+object) || !strings.Contains(got, "belongs to release "+ns+"/a, which is installed and owns it") || strings.Contains(got, "kept-by-older-release") {
		t.Errorf("release a installed: want owned-by-another-release, a installed:\n%s", got)
	}
	h.run(t, false, nil, "uninstall", "a", "-n", ns)
	if got := check(); !strings.Contains(got, "kept-by-older-release: "+object) || !strings.Contains(got, "was kept in the cluster by release "+ns+"/a (helm.sh/resource-policy: keep)") {
		t.Errorf("release a uninstalled, its ConfigMap kept: want kept-by-older-release:\n%s", got)
	}
}
