package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDiffUpgradeShadowVerdicts: SHADOWS rows say what the upgrade does to each shadow, from
// the new render: a shadow the new values would introduce (an inline LOG_LEVEL hiding the
// envFrom ConfigMap's) is reported before it exists; once installed, an upgrade that drops the
// inline entry is said to remove it (resolved), one that keeps it to keep it.
func TestDiffUpgradeShadowVerdicts(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns)
	shadow := func(args ...string) (string, bool, bool) {
		t.Helper()
		rep, out, _ := zooDiff(t, append([]string{"upgrade", "web", filepath.Join(repoRoot, "testdata/charts/webapp"), "-n", ns}, args...)...)
		for _, o := range rep.Objects {
			for _, d := range o.Rows {
				if d.Class == "SHADOWS" && strings.HasSuffix(d.Path, "env[name=LOG_LEVEL]") {
					return out, true, d.Resolved
				}
			}
		}
		return out, false, false
	}
	out, found, _ := shadow("--set", "inlineLogLevel=debug")
	if !found || !strings.Contains(out, "introduced: the new render adds an inline entry") {
		t.Errorf("a shadow the upgrade would introduce is not reported:\n%s", out)
	}
	h.run(t, false, nil, "upgrade", "web", "testdata/charts/webapp", "-n", ns, "--set", "inlineLogLevel=debug")
	if !inlineLogLevel(t, ns) {
		t.Errorf("the introduced inline LOG_LEVEL is not in the Deployment after the real upgrade")
	}
	out, found, resolved := shadow("--set", "inlineLogLevel=debug")
	if !found || resolved || !strings.Contains(out, "kept: the new render still states the inline entry") {
		t.Errorf("a shadow the upgrade keeps:\n%s", out)
	}
	// (with no value flag at all helm upgrade would reuse the last values: set it empty)
	out, found, resolved = shadow("--set", "inlineLogLevel=")
	if !found || !resolved || !strings.Contains(out, "removed: the new render drops the inline entry") {
		t.Errorf("a shadow the upgrade removes:\n%s", out)
	}
	h.run(t, false, nil, "upgrade", "web", "testdata/charts/webapp", "-n", ns, "--set", "inlineLogLevel=")
	if inlineLogLevel(t, ns) {
		t.Errorf("the inline LOG_LEVEL predicted removed is still in the Deployment after the real upgrade")
	}
}

// inlineLogLevel reports whether Deployment ns/web's container states LOG_LEVEL inline.
func inlineLogLevel(t *testing.T, ns string) bool {
	t.Helper()
	d, err := cluster.Kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "LOG_LEVEL" {
			return true
		}
	}
	return false
}
