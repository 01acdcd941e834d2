package defaulting

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/helm-drift/helm-drift/internal/golden"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// TestCRDAgainst: on every CRD of the test data and of the corpus, CRDAgainst gives what
// BuiltIn gives, whether the cluster holds each schema as BuiltIn writes it (then the schema
// is the cluster's own map: no write made) or holds one that differs (then written).
func TestCRDAgainst(t *testing.T) {
	var files []string
	repo := golden.RepoRoot()
	for _, root := range []string{filepath.Join(repo, "testdata"), filepath.Join(repo, "..", "shared", "corpus")} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return nil
		})
	}
	checked, kept := 0, 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), "kind: CustomResourceDefinition") {
			continue
		}
		s, err := manifest.Split(data)
		if err != nil {
			continue // a template, not a document
		}
		objs, err := manifest.Objects(s)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if o.Kind != "CustomResourceDefinition" || o.APIVersion != "apiextensions.k8s.io/v1" {
				continue
			}
			decode := func() map[string]any {
				d, err := o.Decode()
				if err != nil {
					t.Fatalf("%s %s: %v", p, o.Name, err)
				}
				return d
			}
			want, ok, err := BuiltIn(decode())
			if !ok || err != nil {
				continue // not a CRD the API server would take: CRDAgainst falls back the same way
			}
			checked++
			t.Run(filepath.Base(p)+"/"+o.Name, func(t *testing.T) {
				live := stored(t, want)
				got, ok, err := CRDAgainst(decode(), live)
				if !ok || err != nil {
					t.Fatalf("ok %v, err %v", ok, err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("the cluster holds it as written: differs from BuiltIn (-want +got):\n%s", d)
				}
				// A schema that is the cluster's value for value is the cluster's own map.
				if vs, lvs, ds := versions(got), versions(live), versions(decode()); len(vs) > 0 && openAPIV3Schema(ds[0]) != nil &&
					sameValue(openAPIV3Schema(ds[0]), openAPIV3Schema(lvs[0])) {
					kept++
					if reflect.ValueOf(openAPIV3Schema(vs[0])).UnsafePointer() != reflect.ValueOf(openAPIV3Schema(lvs[0])).UnsafePointer() {
						t.Errorf("the schema the cluster holds as written was written again")
					}
				}
				// The cluster's first schema edited: that one is written from the chart's.
				edited := stored(t, want)
				if vs := versions(edited); len(vs) > 0 && openAPIV3Schema(vs[0]) != nil {
					openAPIV3Schema(vs[0])["description"] = "edited in the cluster"
				}
				got, _, _ = CRDAgainst(decode(), edited)
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("the cluster's schema edited: differs from BuiltIn (-want +got):\n%s", d)
				}
			})
		}
	}
	if checked < 3 || kept < 3 {
		t.Errorf("%d CRDs checked, %d of them with a schema kept; want at least the test data's 3", checked, kept)
	}
	t.Logf("%d CRDs checked, %d of them with a schema kept", checked, kept)
}

// stored is obj as the cluster returns it: its JSON decoded, with what the server adds.
func stored(t *testing.T, obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	out["status"] = map[string]any{"acceptedNames": map[string]any{"kind": "X"}}
	md, _ := out["metadata"].(map[string]any)
	md["uid"], md["resourceVersion"] = "u", "1"
	return out
}

// TestSameValue: numbers are equal whatever their Go type; nothing else is.
func TestSameValue(t *testing.T) {
	tests := []struct {
		a, b any
		same bool
	}{
		{map[string]any{"a": []any{1, "x", true, nil}}, map[string]any{"a": []any{int64(1), "x", true, nil}}, true},
		{1.0, int64(1), true},
		{1.5, int64(1), false},
		{"1", 1, false},
		{map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, false},
		{[]any{1, 2}, []any{2, 1}, false},
		{nil, map[string]any{}, false},
		{int64(1 << 60), int64(1<<60 + 1), false},
		{int64(1 << 60), int64(1 << 60), true},
	}
	for _, tt := range tests {
		if got := sameValue(tt.a, tt.b); got != tt.same {
			t.Errorf("sameValue(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
