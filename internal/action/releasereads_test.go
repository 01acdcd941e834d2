package action

import (
	"errors"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	release3 "helm.sh/helm/v3/pkg/release"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	common4 "helm.sh/helm/v4/pkg/release/common"
	rel4 "helm.sh/helm/v4/pkg/release/v1"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
)

// countingDriver3 counts the queries that reach the storage.
type countingDriver3 struct {
	driver3.Driver
	mu      sync.Mutex
	queries int
}

func (d *countingDriver3) Query(labels map[string]string) ([]*release3.Release, error) {
	d.mu.Lock()
	d.queries++
	d.mu.Unlock()
	return d.Driver.Query(labels)
}

// TestReleaseReads3: concurrent queries of one release decode it once; each reader gets a copy
// it can change (values, chart files, info) without the others seeing it; a write is refused.
func TestReleaseReads3(t *testing.T) {
	mem := driver3.NewMemory()
	rel := &release3.Release{Name: "web", Namespace: "apps", Version: 1,
		Info:   &release3.Info{Status: release3.StatusDeployed, LastDeployed: helmtime.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		Config: map[string]any{"image": map[string]any{"tag": "1.0"}, "list": []any{"a"}},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "web", Version: "1.0.0"}, Values: map[string]any{"replicas": 1.0},
			Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("kind: ConfigMap")}}},
		Manifest: "---\nkind: ConfigMap\n"}
	if err := mem.Create("sh.helm.release.v1.web.v1", rel); err != nil {
		t.Fatal(err)
	}
	counting := &countingDriver3{Driver: mem}
	d := shared3{counting, &releaseReads{}}
	labels := map[string]string{"name": "web", "owner": "helm"}
	got := make([][]*release3.Release, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			rls, err := d.Query(labels)
			if err != nil || len(rls) != 1 {
				t.Errorf("Query = %d releases, %v; want the one", len(rls), err)
				return
			}
			got[i] = rls
		})
	}
	wg.Wait()
	if counting.queries != 1 {
		t.Errorf("%d queries reached the storage; want 1", counting.queries)
	}
	if t.Failed() {
		return
	}
	a, b := got[0][0], got[1][0]
	a.Config["image"].(map[string]any)["tag"] = "changed"
	a.Config["list"].([]any)[0] = "changed"
	a.Chart.Templates[0].Data[0] = 'X'
	a.Chart.Values["replicas"] = 9.0
	a.Chart.Metadata.Version = "9.9.9"
	a.Info.Status = release3.StatusSuperseded
	if b.Config["image"].(map[string]any)["tag"] != "1.0" || b.Config["list"].([]any)[0] != "a" ||
		string(b.Chart.Templates[0].Data) != "kind: ConfigMap" || b.Chart.Values["replicas"] != 1.0 ||
		b.Chart.Metadata.Version != "1.0.0" || b.Info.Status != release3.StatusDeployed {
		t.Errorf("a change to one reader's copy reached another's: %+v %+v", b.Config, b.Info)
	}
	if !b.Info.LastDeployed.Equal(rel.Info.LastDeployed) || b.Manifest != rel.Manifest {
		t.Errorf("copy lost fields: %+v", b.Info)
	}
	if again, _ := d.Query(labels); again[0].Config["image"].(map[string]any)["tag"] != "1.0" {
		t.Error("a change to a reader's copy reached the shared decode")
	}
	// Another selection is its own query.
	if _, err := d.Query(map[string]string{"name": "api", "owner": "helm"}); !errors.Is(err, driver3.ErrReleaseNotFound) {
		t.Errorf("Query(api): %v; want not found", err)
	}
	if counting.queries != 2 {
		t.Errorf("%d queries reached the storage; want 2", counting.queries)
	}
	for name, err := range map[string]error{
		"Create": d.Create("k", rel), "Update": d.Update("k", rel), "Delete": func() error { _, err := d.Delete("k"); return err }(),
	} {
		if !errors.Is(err, errReadOnly) {
			t.Errorf("%s: %v; want it refused", name, err)
		}
	}
}

// TestReleaseReads4: the Helm 4 side, the apply method kept.
func TestReleaseReads4(t *testing.T) {
	mem := driver4.NewMemory()
	rel := &rel4.Release{Name: "web", Namespace: "apps", Version: 1, ApplyMethod: "ssa", Info: &rel4.Info{Status: common4.StatusDeployed}, Config: map[string]any{"a": map[string]any{"b": "c"}}}
	if err := mem.Create("sh.helm.release.v1.web.v1", rel); err != nil {
		t.Fatal(err)
	}
	d := shared4{mem, &releaseReads{}}
	labels := map[string]string{"name": "web", "owner": "helm"}
	first, err := d.Query(labels)
	if err != nil || len(first) != 1 {
		t.Fatalf("Query = %v, %v", first, err)
	}
	first[0].(*rel4.Release).Config["a"].(map[string]any)["b"] = "changed"
	second, _ := d.Query(labels)
	r := second[0].(*rel4.Release)
	if r.ApplyMethod != "ssa" || r.Config["a"].(map[string]any)["b"] != "c" {
		t.Errorf("second reader got %+v; want the release as stored", r)
	}
	if err := d.Create("k", rel); !errors.Is(err, errReadOnly) {
		t.Errorf("Create: %v; want it refused", err)
	}
}

// TestDeepCopy: nothing reachable through pointers, maps, slices, arrays or interfaces is
// shared; unexported fields and values are kept.
func TestDeepCopy(t *testing.T) {
	type inner struct {
		B    []byte
		M    map[string]any
		hide *int
	}
	n := 7
	in := &struct {
		P   *inner
		L   []*inner
		A   [1]map[string]string
		I   any
		T   time.Time
		Nil map[string]any
	}{P: &inner{B: []byte("ab"), M: map[string]any{"k": []any{map[string]any{"x": 1}}}, hide: &n},
		L: []*inner{{B: []byte("c")}}, A: [1]map[string]string{{"a": "b"}}, I: map[string]any{"i": "j"}, T: time.Unix(5, 0)}
	out := deepCopy(in)
	out.P.B[0] = 'X'
	out.P.M["k"].([]any)[0].(map[string]any)["x"] = 2
	out.L[0].B[0] = 'X'
	out.A[0]["a"] = "X"
	out.I.(map[string]any)["i"] = "X"
	if string(in.P.B) != "ab" || in.P.M["k"].([]any)[0].(map[string]any)["x"] != 1 || string(in.L[0].B) != "c" ||
		in.A[0]["a"] != "b" || in.I.(map[string]any)["i"] != "j" {
		t.Errorf("a change to the copy reached the original: %+v", in)
	}
	if out.P.hide != &n || !out.T.Equal(in.T) || out.Nil != nil {
		t.Errorf("copy: unexported field, time or nil map not kept: %+v", out)
	}
}
