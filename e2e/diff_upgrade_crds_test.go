package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestDiffUpgradeCRDs: the CRDs of a chart's crds/ directory. diff upgrade --install of a
// release that does not exist lists the CRD helm install would create; after the real install,
// a CRD edited in the cluster shows on diff upgrade, moved by the cluster, with "helm upgrade
// leaves this CRD as it is", and the real helm upgrade leaves it so.
func TestDiffUpgradeCRDs(t *testing.T) {
	const crd = "gadgets.crdapp.example.com"
	h, ns, chart := crdChart(t, "crdapp", crd)

	out, errOut, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--install", "--kubeconfig", cluster.Kubeconfig)
	out += errOut
	if code != 2 || !hasRow(out, "CustomResourceDefinition.apiextensions.k8s.io "+crd, "CHART-ONLY", "(whole object)", "yes: created (helm install, from crds/") {
		t.Errorf("--install of a missing release: exit %d, want the crds/ CRD listed as created by helm install\n%s", code, out)
	}
	h.run(t, false, nil, "install", "app", chart, "-n", ns)
	testenv.Eventually(t, 30*time.Second, "the CRD established and the release's Gadget readable", func() (bool, string) {
		out, errOut, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
		return code == 0, out + errOut
	})

	patch := `{"spec":{"names":{"shortNames":["gdg","edited"]}}}`
	if _, err := cluster.Dynamic.Resource(crds).Patch(context.Background(), crd, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	out, _, code = diffBinary(t, "upgrade", "app", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 2 || !hasRow(out, "CustomResourceDefinition.apiextensions.k8s.io "+crd, "spec.names.shortNames", "cluster", "no: helm upgrade leaves this CRD as it is") {
		t.Errorf("a crds/ CRD edited in the cluster: exit %d, want its row moved by the cluster, left by helm upgrade\n%s", code, out)
	}
	h.run(t, false, nil, "upgrade", "app", chart, "-n", ns)
	obj, err := cluster.Dynamic.Resource(crds).Get(context.Background(), crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := obj.Object["spec"].(map[string]any)["names"].(map[string]any)
	if got := names["shortNames"]; !strings.Contains(strings.Join(stringsOf(got), ","), "edited") {
		t.Errorf("after the real helm upgrade the CRD's shortNames are %v: want the edit left, as predicted", got)
	}
}

// TestDiffUpgradeCRDsSwitchedOff: the crds/ of a subchart a condition switches off are not the
// release's: helm install creates none of them, and diff upgrade --install lists none (with the
// subchart on, it lists its CRD as helm install would create it; with --skip-crds, as helm
// upgrade --install --skip-crds, none).
func TestDiffUpgradeCRDsSwitchedOff(t *testing.T) {
	const crd = "widgets.crdswitch.example.com"
	h, ns, chart := crdChart(t, "crdswitch", crd)
	row := "CustomResourceDefinition.apiextensions.k8s.io " + crd

	out, errOut, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--install", "--kubeconfig", cluster.Kubeconfig)
	if code != 2 || !hasRow(out, row, "CHART-ONLY", "(whole object)", "yes: created (helm install, from crds/") {
		t.Errorf("--install with the CRD subchart on: exit %d, want its CRD listed as created by helm install\n%s%s", code, out, errOut)
	}
	out, errOut, code = diffBinary(t, "upgrade", "app", chart, "-n", ns, "--install", "--skip-crds", "--kubeconfig", cluster.Kubeconfig)
	if strings.Contains(out, crd) || !strings.Contains(out, "app-settings") {
		t.Errorf("--install --skip-crds: exit %d, want the ConfigMap and no row of the CRD\n%s%s", code, out, errOut)
	}
	off := []string{"--set", "crds.enabled=false"}
	out, errOut, code = diffBinary(t, append([]string{"upgrade", "app", chart, "-n", ns, "--install", "--kubeconfig", cluster.Kubeconfig}, off...)...)
	if strings.Contains(out, crd) {
		t.Errorf("--install with the CRD subchart off: exit %d, want no row of its CRD\n%s%s", code, out, errOut)
	}
	h.run(t, false, nil, append([]string{"install", "app", chart, "-n", ns}, off...)...)
	if _, err := cluster.Dynamic.Resource(crds).Get(context.Background(), crd, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("helm install with the CRD subchart off: the CRD is there (%v), want it not created", err)
	}
	out, errOut, code = diffBinary(t, append([]string{"upgrade", "app", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig}, off...)...)
	if code != 0 || strings.Contains(out, crd) {
		t.Errorf("the installed release, its CRD subchart off: exit %d, want 0 and no row of the CRD\n%s%s", code, out, errOut)
	}
}

// crdChart is the Helm 3 CLI, a namespace and testdata/charts/NAME for a test of a chart whose
// crds/ hold the CRD crd: none left by another test, and deleted after this one.
func crdChart(t *testing.T, name, crd string) (*helmCLI, string, string) {
	t.Helper()
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	crdGone(t, crd)
	t.Cleanup(func() { cluster.Dynamic.Resource(crds).Delete(context.Background(), crd, metav1.DeleteOptions{}) })
	return h, ns, filepath.Join(repoRoot, "testdata/charts", name)
}

func stringsOf(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// crdGone waits until CRD name, which another test may have left terminating, is gone.
func crdGone(t *testing.T, name string) {
	t.Helper()
	if cluster == nil {
		t.Skip("testenv: no environment (-short)")
	}
	testenv.Eventually(t, time.Minute, "no CRD "+name+" left by another test", func() (bool, string) {
		_, err := cluster.Dynamic.Resource(crds).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), errString(err)
	})
}
