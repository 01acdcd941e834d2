package objcache

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestRoundTrip: what Get gives back is what Put was given, value for value and type for type
// (an int stays an int, a float a float even when whole); a list holding a type Get could not
// give back, or a float JSON cannot write, is not kept at all.
func TestRoundTrip(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	for _, tc := range []struct {
		name string
		objs []map[string]any
		kept bool
	}{
		{"scalars", []map[string]any{{"i": 2, "neg": -7, "big": 12345678901, "f": 0.5, "whole": 2.0, "exp": 1e21, "tiny": 1e-9,
			"s": "2", "quoted": "a \"b\" \\ \u00e9 \n", "t": true, "f2": false, "nil": nil}}, true},
		{"nested", []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "labels": map[string]any{}},
			"list": []any{1, "1", 1.5, []any{}, map[string]any{"x": []any{nil}}}}, {"second": map[string]any{}}}, true},
		{"none", nil, true},
		{"a timestamp", []map[string]any{{"t": time.Unix(0, 0)}}, false},
		{"an int64", []map[string]any{{"i": int64(1)}}, false},
		{"NaN", []map[string]any{{"f": math.NaN()}}, false},
		{"deep infinity", []map[string]any{{"a": []any{map[string]any{"f": math.Inf(1)}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := Key([]byte(tc.name))
			c.Put(key, tc.objs)
			got, ok := c.Get(key)
			if ok != tc.kept {
				t.Fatalf("kept %v, want %v", ok, tc.kept)
			}
			if !ok {
				return
			}
			if len(got) != len(tc.objs) || (len(got) > 0 && !reflect.DeepEqual(got, tc.objs)) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tc.objs)
			}
			// Each Get decodes afresh: changing one result changes no other.
			if len(got) > 0 {
				got[0]["changed"] = true
				again, _ := c.Get(key)
				if _, ok := again[0]["changed"]; ok {
					t.Error("a change to one result shows in the next")
				}
			}
		})
	}
}

// TestKey: parts are told apart by their lengths, not run together.
func TestKey(t *testing.T) {
	if Key([]byte("ab"), []byte("c")) == Key([]byte("a"), []byte("bc")) {
		t.Error("ab|c and a|bc share a key")
	}
	if Key([]byte("a")) != Key([]byte("a")) {
		t.Error("a key is not stable")
	}
}

// TestNoDir: a cache with no directory keeps nothing and writes nothing.
func TestNoDir(t *testing.T) {
	var c *Cache
	c.Put("k", []map[string]any{{"a": 1}})
	if _, ok := c.Get("k"); ok {
		t.Error("a nil cache gave an entry")
	}
	c = &Cache{}
	c.Put("k", []map[string]any{{"a": 1}})
	if _, ok := c.Get("k"); ok {
		t.Error("a cache with no directory gave an entry")
	}
}

// TestUnreadable: an entry that does not decode (a disk filled halfway, an older format) is
// taken as none.
func TestUnreadable(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	key := Key([]byte("x"))
	c.Put(key, []map[string]any{{"a": 1}})
	if err := os.WriteFile(c.path(key), []byte(`[{"a": 1`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key); ok {
		t.Error("a truncated entry was read")
	}
}

// TestPrune: a shard keeps its PerShard newest entries; the oldest go, and a stale temporary
// file with them.
func TestPrune(t *testing.T) {
	c := &Cache{Dir: t.TempDir(), PerShard: 3}
	old := time.Now().Add(-2 * time.Hour)
	var keys []string
	for i := range 5 {
		key := fmt.Sprintf("aa%062d", i) // one shard
		keys = append(keys, key)
		c.Put(key, []map[string]any{{"i": i}})
		at := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(c.path(key), at, at)
	}
	stale := filepath.Join(c.Dir, "aa", ".tmp-stale")
	os.WriteFile(stale, nil, 0o600)
	os.Chtimes(stale, old, old)
	c.Put(keys[4], []map[string]any{{"i": 4}}) // written again: the newest
	for i, key := range keys {
		_, ok := c.Get(key)
		if want := i >= 2; ok != want {
			t.Errorf("entry %d kept %v, want %v", i, ok, want)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file: %v", err)
	}
}
