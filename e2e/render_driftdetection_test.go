package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var helmReleases = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

var pushOnce sync.Once

// pushComponent packages testdata/charts/component and pushes it to the test registry, once.
func pushComponent(t *testing.T, h *helmCLI) {
	t.Helper()
	pushOnce.Do(func() {
		dir := t.TempDir()
		h.run(t, false, nil, "package", "testdata/charts/component", "-d", dir)
		h.run(t, false, nil, "push", filepath.Join(dir, "component-1.0.0.tgz"), "oci://"+cluster.Registry+"/charts", "--plain-http")
	})
}

// clusterHelm is a helm CLI that talks to the test environment.
func clusterHelm(t *testing.T, name string) *helmCLI {
	t.Helper()
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	h := newHelm(t, name)
	h.env = append(h.env, "KUBECONFIG="+cluster.Kubeconfig)
	return h
}

// TestDriftDetectionCorrectsDeletedObject is the acceptance test of injected drift detection,
// against the real helm-controller: an umbrella chart installed with the Helm CLI (3 and 4)
// renders a HelmRelease for a component chart in the test registry. With the post-renderer
// selecting it (mode enabled), a deleted object of the component comes back on a plain
// requested reconcile, with a new uid, no new Helm revision, and no drift reported after.
// Without it (the control case), the object stays deleted while helm-controller reports the
// release in sync.
func TestDriftDetectionCorrectsDeletedObject(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		for _, withRenderer := range []bool{true, false} {
			name := helmName + "/control"
			if withRenderer {
				name = helmName + "/post-renderer"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				h := clusterHelm(t, helmName)
				h.installPlugins(t)
				pushComponent(t, h)
				ns := cluster.Namespace(t)
				args := []string{"install", "umbrella", "testdata/charts/umbrella", "-n", ns, "--set", "registry=" + cluster.Registry}
				if withRenderer {
					rules := []string{"--drift-detection=" + ns + "/component=enabled", "--namespace=" + ns, "--strict"}
					if helmName == "helm3" {
						args = append(args, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render")
					} else {
						args = append(args, "--post-renderer", "drift-render")
					}
					args = append(args, postRendererArgs(rules...)...)
				}
				h.run(t, false, nil, args...)
				checkDriftCorrection(t, ns, withRenderer)
			})
		}
	}
}

func checkDriftCorrection(t *testing.T, ns string, withRenderer bool) {
	ctx := context.Background()
	hrs := cluster.Dynamic.Resource(helmReleases).Namespace(ns)
	hr, err := hrs.Get(ctx, "component", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HelmRelease %s/component: %v", ns, err)
	}
	mode, _, _ := unstructured.NestedString(hr.Object, "spec", "driftDetection", "mode")
	if want := map[bool]string{true: "enabled", false: ""}[withRenderer]; mode != want {
		t.Fatalf("spec.driftDetection.mode in the cluster = %q, want %q", mode, want)
	}

	cms := cluster.Kube.CoreV1().ConfigMaps(ns)
	testenv.Eventually(t, 3*time.Minute, "helm-controller installs the component", func() (bool, string) {
		hr, err := hrs.Get(ctx, "component", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if cond := condition(hr, "Ready"); cond != "True" {
			return false, "Ready=" + cond + ": " + conditionMessage(hr, "Ready")
		}
		// Flux's patch helper writes the conditions and the rest of the status in two
		// requests: Ready=True can be seen before status.history, which is read next.
		if history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history"); len(history) == 0 {
			return false, "Ready=True but no status.history yet"
		}
		_, err = cms.Get(ctx, "component-settings", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	before, err := cms.Get(ctx, "component-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revision := latestRevision(t, ns)

	if err := cms.Delete(ctx, "component-settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	if _, err := hrs.Patch(ctx, "component", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "helm-controller handles the requested reconcile", func() (bool, string) {
		hr, err := hrs.Get(ctx, "component", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		handled, _, _ := unstructured.NestedString(hr.Object, "status", "lastHandledReconcileAt")
		if handled != token {
			return false, "lastHandledReconcileAt=" + handled
		}
		if !withRenderer {
			return true, ""
		}
		// Drift detection ran: the object is back and the release reports no drift.
		if _, err := cms.Get(ctx, "component-settings", metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return condition(hr, "Drifted") == "False", "Drifted=" + condition(hr, "Drifted") + ": " + conditionMessage(hr, "Drifted")
	})

	after, err := cms.Get(ctx, "component-settings", metav1.GetOptions{})
	if withRenderer {
		if err != nil {
			t.Fatalf("the deleted ConfigMap did not come back: %v", err)
		}
		if after.UID == before.UID {
			t.Errorf("the ConfigMap has its old uid %s: it was not recreated", after.UID)
		}
		if got := latestRevision(t, ns); got != revision {
			t.Errorf("Helm revision went from %d to %d: drift correction must not upgrade", revision, got)
		}
		if !logHas(ns, "detected changes in cluster state") {
			t.Errorf("helm-controller did not log the drift it corrected")
		}
		return
	}
	// Control: helm-controller looked, found the release in sync, and left the object deleted.
	if !apierrors.IsNotFound(err) {
		t.Fatalf("without drift detection the ConfigMap should stay deleted; get: %v", err)
	}
	if !logHas(ns, "release in-sync with desired state") {
		t.Errorf("helm-controller did not report the release in sync")
	}
	if got := latestRevision(t, ns); got != revision {
		t.Errorf("Helm revision went from %d to %d", revision, got)
	}
}

// logHas reports whether helm-controller logged text about a HelmRelease in namespace ns.
func logHas(ns, text string) bool {
	for _, line := range strings.Split(cluster.Log("helm-controller"), "\n") {
		if strings.Contains(line, text) && strings.Contains(line, `"namespace":"`+ns+`"`) {
			return true
		}
	}
	return false
}

// latestRevision is the Helm revision of the component's release as helm-controller records it
// in status.history, waited for: the status fields other than the conditions are written in a
// request of their own, after them.
func latestRevision(t *testing.T, ns string) int64 {
	t.Helper()
	var v int64
	testenv.Eventually(t, time.Minute, "HelmRelease "+ns+"/component records status.history", func() (bool, string) {
		hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "component", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(history) == 0 {
			return false, "no status.history"
		}
		latest, ok := history[0].(map[string]any)
		if !ok {
			return false, "status.history[0] is not an object"
		}
		v, _, _ = unstructured.NestedInt64(latest, "version")
		return v > 0, "status.history[0].version unset"
	})
	return v
}

func condition(o *unstructured.Unstructured, typ string) string {
	return conditionField(o, typ, "status")
}

func conditionMessage(o *unstructured.Unstructured, typ string) string {
	return conditionField(o, typ, "message")
}

func conditionField(o *unstructured.Unstructured, typ, field string) string {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m[field].(string)
			return s
		}
	}
	return ""
}
