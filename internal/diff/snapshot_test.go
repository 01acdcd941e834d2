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
		return Input{Release: fmt.Sprintf("r-%d", i), Namespace: "apps", Revision: 1, Desired: desired[i],
			Previous: strings.Replace(desired[i], "level: info", "level: debug", 1), Rendered: true, Normalize: Offline, Workers: 2}
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
