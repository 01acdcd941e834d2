package diff

import (
	"github.com/helm-drift/helm-drift/internal/diff/difftest"

	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestSnapshot: twenty releases of one namespace measured concurrently against one snapshot
// report what each measured alone reports, with one LIST per kind for the whole run, and no
// measurement changes the objects the snapshot shares.
func TestSnapshot(t *testing.T) {
	const releases = 20
	var live, desired []string
	for i := range releases {
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-%d, namespace: apps}\ndata: {mode: fast, level: info}", i)
		live = append(live, strings.Replace(cm, "mode: fast", fmt.Sprintf("mode: slow-%d", i%3), 1))
		desired = append(desired, cm+"\n---\n"+fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: creds-%d, namespace: apps}\ndata: {password: %s}", i, "Y2hhcnQ="))
	}
	live = append(live, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds-3, namespace: apps}\ndata: {password: bGl2ZQ==}")
	cl := &difftest.Cluster{Objects: difftest.Objects(t, strings.Join(live, "\n---\n"))}
	before := make([]map[string]any, len(cl.Objects))
	for i, o := range cl.Objects {
		before[i] = runtime.DeepCopyJSON(o)
	}
	input := func(i int) Input {
		return Input{Release: fmt.Sprintf("r-%d", i), Namespace: "apps", Revision: 1, Desired: desired[i], Previous: strings.Replace(desired[i], "level: info", "level: debug", 1), Rendered: true, Options: Options{Normalize: Offline, Workers: 2}}
	}
	alone := make([][]string, releases)
	for i := range releases {
		rep, err := Run(context.Background(), cl, input(i))
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = rowsOf(rep)
	}
	cl.Lists = nil
	snap := NewSnapshot(cl)
	shared := make([][]string, releases)
	var wg sync.WaitGroup
	for i := range releases {
		wg.Go(func() {
			rep, err := Run(context.Background(), snap, input(i))
			if err != nil {
				t.Error(err)
				return
			}
			shared[i] = rowsOf(rep)
		})
	}
	wg.Wait()
	for i := range releases {
		if strings.Join(shared[i], "\n") != strings.Join(alone[i], "\n") || len(alone[i]) == 0 {
			t.Errorf("release r-%d with the snapshot:\n%s\nalone:\n%s", i, strings.Join(shared[i], "\n"), strings.Join(alone[i], "\n"))
		}
	}
	if len(cl.Lists) != 2 || cl.Lists["/ConfigMap/apps"] != 1 || cl.Lists["/Secret/apps"] != 1 {
		t.Errorf("LISTs %v: want one per kind for the run", cl.Lists)
	}
	if !reflect.DeepEqual(cl.Objects, before) {
		t.Errorf("a measurement changed the objects the snapshot shares")
	}
}

// TestSnapshotGet: the first object of a kind and namespace asked for is a GET; from the
// second, the kind is listed there once and every object answered from the list (one asked
// twice is read once); one the list lacks is a GET (not found); a kind the user may not list
// is read with GETs.
func TestSnapshotGet(t *testing.T) {
	var objs []string
	for i := range 5 {
		objs = append(objs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: apps}", i))
	}
	objs = append(objs, "apiVersion: v1\nkind: Secret\nmetadata: {name: s-0, namespace: apps}", "apiVersion: v1\nkind: Secret\nmetadata: {name: s-1, namespace: apps}")
	cl := &difftest.Cluster{Objects: difftest.Objects(t, strings.Join(objs, "\n---\n")), Forbidden: map[string]bool{"Secret": true}}
	snap := NewSnapshot(cl)
	ctx := context.Background()
	for _, name := range []string{"cm-0", "cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-1"} {
		got, err := snap.Get(ctx, "", "v1", "ConfigMap", "apps", name)
		if err != nil || got["metadata"].(map[string]any)["name"] != name {
			t.Fatalf("Get %s: %v, %v", name, got, err)
		}
	}
	if _, err := snap.Get(ctx, "", "v1", "ConfigMap", "apps", "gone"); err == nil {
		t.Error("Get gone: want not found")
	}
	if cl.Lists["/ConfigMap/apps"] != 1 || cl.Gets["/ConfigMap/apps"] != 2 {
		t.Errorf("ConfigMaps: %d LISTs, %d GETs; want 1 LIST and 2 GETs (cm-0 first, then gone, which the list lacks)", cl.Lists["/ConfigMap/apps"], cl.Gets["/ConfigMap/apps"])
	}
	// Secrets may not be listed here (difftest's Forbidden refuses GETs too): the LIST is
	// tried once and each Secret is asked for with a GET, its error the GET's own.
	for _, name := range []string{"s-0", "s-1", "s-1"} {
		if _, err := snap.Get(ctx, "", "v1", "Secret", "apps", name); err == nil {
			t.Errorf("Get %s: want the GET's refusal", name)
		}
	}
	if cl.Lists["/Secret/apps"] != 1 || cl.Gets["/Secret/apps"] != 2 {
		t.Errorf("Secrets: %d LISTs, %d GETs; want the LIST tried once, then one GET per Secret", cl.Lists["/Secret/apps"], cl.Gets["/Secret/apps"])
	}
}

// TestSnapshotCRDs: a chart's CRDs are read with a GET each, never a LIST of every CRD of the
// cluster, and the same read gives the schema its custom resources are defaulted by (a
// default the schema sets is no drift).
func TestSnapshotCRDs(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              mode: {type: string, default: fast}`
	const other = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets}\nspec: {group: example.com}"
	const widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: apps}\nspec: {size: 1}"
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {a: b}"
	liveWidget := strings.Replace(widget, "{size: 1}", "{size: 1, mode: fast}", 1)
	cl := &difftest.Cluster{Objects: difftest.Objects(t, strings.Join([]string{crd, other, liveWidget, cm}, "\n---\n"))}
	snap := NewSnapshot(cl)
	ctx := context.Background()
	desired := widget + "\n---\n" + cm
	rep, err := Run(ctx, snap, Input{Release: "web", Namespace: "apps", Revision: 1, Desired: desired, CRDs: crd, CRDPolicy: CRDsHelmUpgrade, Rendered: true, Options: Options{Normalize: Offline, Workers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(rep); len(got) != 0 || len(rep.Objects) != 3 {
		t.Errorf("rows %v in %d objects: want none in 3 (the schema's default is no drift, the chart's CRD is the cluster's)", got, len(rep.Objects))
	}
	if n := cl.Lists["apiextensions.k8s.io/CustomResourceDefinition/"]; n != 0 {
		t.Errorf("%d LISTs of CRDs: want a GET of the chart's own", n)
	}
	if n := cl.Gets["apiextensions.k8s.io/CustomResourceDefinition/"]; n != 1 {
		t.Errorf("%d GETs of the CRD: want one, for the CRD and its kind's schema", n)
	}
}
