package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestDiffHelmReleaseCRDs: the crds/ CRD of a HelmRelease's chart, installed by the real
// helm-controller (crds policy Create) and then edited in the cluster. While the HelmRelease is
// in sync, diff helmrelease says the next reconcile leaves the CRD as it is; a change previewed
// with --file that upgrades with spec.upgrade.crds: CreateReplace says the CRD is replaced with
// the chart's — and once applied, helm-controller's upgrade does replace it.
func TestDiffHelmReleaseCRDs(t *testing.T) {
	const crd = "gadgets.crdapp.example.com"
	crdGone(t, crd)
	t.Cleanup(func() { cluster.Dynamic.Resource(crds).Delete(context.Background(), crd, metav1.DeleteOptions{}) })
	ns := cluster.Namespace(t)
	chartHelmRelease(t, ns, "crdapp")
	object := "CustomResourceDefinition.apiextensions.k8s.io " + crd

	patch := `{"spec":{"names":{"shortNames":["gdg","edited"]}}}`
	if _, err := cluster.Dynamic.Resource(crds).Patch(context.Background(), crd, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	out, code := hrDiff(t, "web", "-n", ns)
	if code != 2 || !strings.Contains(out, "next reconcile: drift correction") || !hasRow(out, object, "spec.names.shortNames", "cluster", "no: left as it is: the next reconcile neither installs nor upgrades") {
		t.Errorf("an edited crds/ CRD, the HelmRelease in sync: exit %d, want the CRD row left by the next reconcile\n%s", code, out)
	}

	hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := hr.Object["spec"].(map[string]any)
	spec["values"] = map[string]any{"note": "upgrade"}
	upgrade, _ := spec["upgrade"].(map[string]any)
	upgrade["crds"] = "CreateReplace"
	written := map[string]any{"apiVersion": hr.GetAPIVersion(), "kind": hr.GetKind(), "metadata": map[string]any{"name": "web", "namespace": ns}, "spec": spec}
	data, _ := json.Marshal(written)
	file := filepath.Join(t.TempDir(), "web-hr.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = hrDiff(t, "--file", file)
	if code != 2 || !strings.Contains(out, "next reconcile: upgrade") || !hasRow(out, object, "spec.names.shortNames", "yes: ", "the chart's (crds policy CreateReplace)") {
		t.Errorf("--file with spec.upgrade.crds CreateReplace: exit %d, want the CRD predicted replaced\n%s", code, out)
	}
	applyYAML(t, string(data))
	waitHistory(t, ns, 2)
	testenv.Eventually(t, 30*time.Second, "the CRD replaced with the chart's", func() (bool, string) {
		obj, err := cluster.Dynamic.Resource(crds).Get(context.Background(), crd, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		names, _ := obj.Object["spec"].(map[string]any)["names"].(map[string]any)
		got := strings.Join(stringsOf(names["shortNames"]), ",")
		return got == "gdg", "shortNames " + got
	})
}
