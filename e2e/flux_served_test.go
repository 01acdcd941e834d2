package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// TestFluxServedVersions: the API versions diff tree takes Flux's controllers to serve (it
// notes an object in another one as one they cannot apply) are those the CRDs of the real
// controllers the test environment runs serve, kind by kind.
func TestFluxServedVersions(t *testing.T) {
	list, err := cluster.Dynamic.Resource(crds).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, crd := range list.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		want, ok := fluxtree.ServedVersions[group]
		if !ok {
			continue
		}
		seen[group]++
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		var served []string
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if s, _ := vm["served"].(bool); s {
				served = append(served, vm["name"].(string))
			}
		}
		if !slices.Equal(served, []string{want}) {
			t.Errorf("CRD %s serves %s, diff tree takes %s/%s alone to be served", crd.GetName(), strings.Join(served, ", "), group, want)
		}
	}
	for group := range fluxtree.ServedVersions {
		if seen[group] == 0 {
			t.Errorf("no CRD of %s in the test environment", group)
		}
	}
}
