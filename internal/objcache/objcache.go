// Package objcache keeps lists of objects (as kustomize builds return them: maps of strings,
// ints, floats, bools, nils, lists and maps) on disk between runs, by a key that digests what
// made them. An entry gives back values of the very types it was given, so that a cached object
// is indistinguishable from a freshly built one; a list holding any other type (a timestamp,
// say) is not kept, and is built again each run.
package objcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Cache is a directory of entries, one file each, named by key, in 256 shards by the key's first
// two hex digits. The zero value (no Dir) keeps nothing. It is safe for concurrent use, by
// goroutines and by processes: an entry is written whole, to a temporary file renamed into place.
// A shard keeps at most PerShard entries (default 128, some 32,000 in all): writing one more
// removes the shard's oldest, which a run that still needs rebuilds and writes again.
type Cache struct {
	Dir      string
	PerShard int
}

// Key digests its parts (each length-prefixed, so that no two lists of parts share a key) into
// an entry's name.
func Key(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Get returns the objects kept under key, decoded afresh (the caller may change them), and
// whether there was an entry. An entry that cannot be read is taken as none.
func (c *Cache) Get(key string) ([]map[string]any, bool) {
	if c == nil || c.Dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var raw []map[string]any
	if err := d.Decode(&raw); err != nil {
		return nil, false
	}
	for _, m := range raw {
		if !restore(m) {
			return nil, false
		}
	}
	return raw, true
}

// Put keeps objs under key, unless one of them holds a value of a type Get could not give
// back as it was (then nothing is kept). Failing to write is not an error: the cache only
// saves work.
func (c *Cache) Put(key string, objs []map[string]any) {
	if c == nil || c.Dir == "" {
		return
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		if !encode(&b, o) {
			return
		}
	}
	b.WriteByte(']')
	shard := filepath.Dir(c.path(key))
	if err := os.MkdirAll(shard, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(shard, ".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(b.Bytes())
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if err := os.Rename(f.Name(), c.path(key)); err != nil {
		os.Remove(f.Name())
		return
	}
	c.prune(shard)
}

// path is key's file: in the shard of its first two characters.
func (c *Cache) path(key string) string {
	shard := "_"
	if len(key) >= 2 {
		shard = key[:2]
	}
	return filepath.Join(c.Dir, shard, key+".json")
}

// prune removes the oldest entries of a shard beyond PerShard.
func (c *Cache) prune(shard string) {
	limit := c.PerShard
	if limit <= 0 {
		limit = 128
	}
	PruneDir(shard, limit, func(e fs.DirEntry) bool { return !e.IsDir() })
}

// PruneDir keeps, of the entries of dir that entry tells, the keep last written (or touched),
// and removes the others; and removes what a process stopped halfway left there (".tmp-"
// entries an hour old). A cache's pruning: errors are passed over.
func PruneDir(dir string, keep int, entry func(fs.DirEntry) bool) {
	es, err := os.ReadDir(dir)
	if err != nil || len(es) <= keep {
		return
	}
	type kept struct {
		name    string
		written time.Time
	}
	var entries []kept
	for _, e := range es {
		fi, err := e.Info()
		switch {
		case err != nil:
		case strings.HasPrefix(e.Name(), ".tmp-"):
			if time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		case entry(e):
			entries = append(entries, kept{e.Name(), fi.ModTime()})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].written.After(entries[j].written) })
	for _, e := range entries[min(len(entries), keep):] {
		os.RemoveAll(filepath.Join(dir, e.name))
	}
}

// encode writes v as JSON, a float with a point or an exponent so that it reads back as a
// float, and reports false for a value of any other type than those Get restores.
func encode(b *bytes.Buffer, v any) bool {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		s, _ := json.Marshal(v)
		b.Write(s)
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if !encode(b, e) {
				return false
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		i := 0
		for k, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			i++
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteByte(':')
			if !encode(b, e) {
				return false
			}
		}
		b.WriteByte('}')
	default:
		return false
	}
	return true
}

// restore turns the json.Numbers of m back into the ints and floats encode wrote, in place.
func restore(m map[string]any) bool {
	for k, v := range m {
		r, ok := restoreValue(v)
		if !ok {
			return false
		}
		m[k] = r
	}
	return true
}

func restoreValue(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			f, err := v.Float64()
			return f, err == nil
		}
		i, err := strconv.Atoi(string(v))
		return i, err == nil
	case []any:
		for i, e := range v {
			r, ok := restoreValue(e)
			if !ok {
				return nil, false
			}
			v[i] = r
		}
	case map[string]any:
		return v, restore(v)
	}
	return v, true
}

// Copy is a deep copy of an object Get returned (of the types it holds).
func Copy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return Copy(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
