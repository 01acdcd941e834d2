package fluxtree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/objcache"
)

// A Kustomization whose path holds a kustomization file is built whole: what it reads is the
// kustomization's choice (overlays, patches, generators' files, components). Such a build is a
// function of what it reads through its file system, and of nothing else: the kustomization
// file (the Flux generator's, in memory), and every file, directory and existence kustomize asks
// about. So the build is kept in Options.Builds with the trace of what it read (each question
// and a digest of its answer), and a run after asks the same questions of its own files: when
// every answer is the same, so is the build, and it is read from the cache instead. A pull
// request that edits one app's values rebuilds the Kustomizations that read that file, no other.
//
// Kept only what is sure to be such a function: a build that read nothing outside its source
// (a remote base, cloned into a temporary directory, is read from there), wrote nothing (the
// clone), and whose kustomization files name no URL (kustomize fetches a remote file over HTTP,
// not through the file system); with no decryption, which reads the objects as kustomize
// returns them (postBuild's variables are substituted after, from the cache as from a build),
// and with Flux's generator reading the kustomization file only (not
// scanning the files, which cachedMake does). Up to four traces are kept for one kustomization
// file: a base and a head, and the runs before.

// fsTrace is what a build asked of its file system, in order, and whether it did anything that
// keeps it from the cache. Paths are relative to the source.
type fsTrace struct {
	mu    sync.Mutex
	src   string
	ops   []traceOp
	spoil string // why the build is not kept ("" when it may be)
}

// traceOp is one question and a digest of its answer.
type traceOp struct {
	Op, Path, Answer string
}

// rel is path relative to the source, false when it lies outside.
func (t *fsTrace) rel(path string) (string, bool) {
	r, err := filepath.Rel(t.src, path)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

func (t *fsTrace) record(op, path, answer string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.rel(path)
	if !ok {
		t.spoil = op + " " + path + ": outside the source"
		return
	}
	t.ops = append(t.ops, traceOp{op, r, answer})
}

func (t *fsTrace) spoiled(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spoil == "" {
		t.spoil = why
	}
}

// digest is the answer's digest: the data's, or the error's mark.
func digest(data []byte, err error) string {
	if err != nil {
		return "error"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// tracingFS answers a build through its file system and records each question (see fsTrace).
type tracingFS struct {
	filesys.FileSystem
	t *fsTrace
}

func (f *tracingFS) ReadFile(path string) ([]byte, error) {
	data, err := f.FileSystem.ReadFile(path)
	f.t.record("read", path, digest(data, err))
	if err == nil && isKustomizationFile(filepath.Base(path)) && bytes.Contains(data, []byte("://")) {
		f.t.spoiled(path + " names a URL")
	}
	return data, err
}

func (f *tracingFS) Exists(path string) bool {
	ok := f.FileSystem.Exists(path)
	f.t.record("exists", path, boolAnswer(ok))
	return ok
}

func (f *tracingFS) IsDir(path string) bool {
	ok := f.FileSystem.IsDir(path)
	f.t.record("isdir", path, boolAnswer(ok))
	return ok
}

func (f *tracingFS) ReadDir(path string) ([]string, error) {
	names, err := f.FileSystem.ReadDir(path)
	f.t.record("readdir", path, digest([]byte(strings.Join(names, "\x00")), err))
	return names, err
}

func (f *tracingFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	dir, name, err := f.FileSystem.CleanedAbs(path)
	answer := "error"
	if err == nil {
		r, ok := f.t.rel(string(dir))
		if !ok {
			f.t.spoiled("cleaned " + path + ": outside the source")
		}
		answer = r + "\x00" + name
	}
	f.t.record("cleaned", path, answer)
	return dir, name, err
}

func (f *tracingFS) Glob(pattern string) ([]string, error) {
	matches, err := f.FileSystem.Glob(pattern)
	rels := make([]string, 0, len(matches))
	for _, m := range matches {
		r, ok := f.t.rel(m)
		if !ok {
			f.t.spoiled("glob " + pattern + ": outside the source")
		}
		rels = append(rels, r)
	}
	f.t.record("glob", pattern, digest([]byte(strings.Join(rels, "\x00")), err))
	return matches, err
}

// The rest of the file system is not a question with an answer to record: a build that uses it
// is not kept.

func (f *tracingFS) Open(path string) (filesys.File, error) {
	f.t.spoiled("opened " + path)
	return f.FileSystem.Open(path)
}

func (f *tracingFS) Walk(path string, fn filepath.WalkFunc) error {
	f.t.spoiled("walked " + path)
	return f.FileSystem.Walk(path, fn)
}

func (f *tracingFS) Create(path string) (filesys.File, error) {
	f.t.spoiled("created " + path)
	return f.FileSystem.Create(path)
}

func (f *tracingFS) Mkdir(path string) error {
	f.t.spoiled("made " + path)
	return f.FileSystem.Mkdir(path)
}

func (f *tracingFS) MkdirAll(path string) error {
	f.t.spoiled("made " + path)
	return f.FileSystem.MkdirAll(path)
}

func (f *tracingFS) RemoveAll(path string) error {
	f.t.spoiled("removed " + path)
	return f.FileSystem.RemoveAll(path)
}

func (f *tracingFS) WriteFile(path string, data []byte) error {
	f.t.spoiled("wrote " + path)
	return f.FileSystem.WriteFile(path, data)
}

func boolAnswer(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// replay asks fs the questions of ops again: true when every answer is the same.
func replay(fs filesys.FileSystem, src string, ops []traceOp) bool {
	t := &fsTrace{src: src}
	tf := &tracingFS{FileSystem: fs, t: t}
	for _, op := range ops {
		path := filepath.Join(src, filepath.FromSlash(op.Path))
		n := len(t.ops)
		switch op.Op {
		case "read":
			tf.ReadFile(path)
		case "exists":
			tf.Exists(path)
		case "isdir":
			tf.IsDir(path)
		case "readdir":
			tf.ReadDir(path)
		case "cleaned":
			tf.CleanedAbs(path)
		case "glob":
			tf.Glob(path)
		default:
			return false
		}
		if t.spoil != "" || len(t.ops) != n+1 || t.ops[n].Answer != op.Answer {
			return false
		}
	}
	return true
}

// tracedKey is the key the whole build of a Kustomization is kept under (see above): its
// kustomization file, as the Flux generator made it (kfile, manifest); "" when the build may
// not be kept.
func (b *builder) tracedKey(spec map[string]any, src, kfile string, manifest []byte, generated bool, decrypted map[string][]byte) string {
	if b.opts.Builds == nil || b.opts.Builds.Dir == "" || generated || len(decrypted) > 0 {
		return ""
	}
	if _, ok := spec["decryption"]; ok {
		return ""
	}
	rel, err := filepath.Rel(src, kfile)
	if err != nil {
		return ""
	}
	remote := "no remote bases"
	if !b.opts.NoRemoteBases {
		remote = "remote bases"
	}
	return objcache.Key(buildVersion(), []byte("whole build"), []byte(filepath.ToSlash(rel)), manifest, []byte(remote))
}

// keptTraces is how many traces are kept for one kustomization file.
const keptTraces = 4

// tracedGet is the build kept under key whose trace the files of src answer alike, and whether
// there is one.
func (b *builder) tracedGet(key, src, kfile string, manifest []byte) ([]map[string]any, bool) {
	index, ok := b.opts.Builds.Get(key)
	if !ok {
		return nil, false
	}
	// The build's file system, read only: one serves every trace.
	fs, err := buildFS(src, kfile, manifest, nil, !b.opts.NoRemoteBases)
	if err != nil {
		return nil, false
	}
	for _, e := range index {
		ops, ok := traceOps(e["trace"])
		id, _ := e["id"].(string)
		if !ok || id == "" {
			continue
		}
		if !replay(fs, src, ops) {
			continue
		}
		if objs, ok := b.opts.Builds.Get(id); ok {
			return objs, true
		}
	}
	return nil, false
}

// tracedPut keeps objs, the build traced by t, under key (beside the other traces kept there,
// the oldest dropped).
func (b *builder) tracedPut(key string, t *fsTrace, objs []map[string]any) {
	ops := make([]any, len(t.ops))
	for i, op := range t.ops {
		ops[i] = []any{op.Op, op.Path, op.Answer}
	}
	raw, _ := json.Marshal(t.ops)
	id := objcache.Key([]byte(key), raw)
	b.opts.Builds.Put(id, objs)
	index := []map[string]any{{"trace": ops, "id": id}}
	old, _ := b.opts.Builds.Get(key)
	for _, e := range old {
		if other, _ := e["id"].(string); other != id && len(index) < keptTraces {
			index = append(index, e)
		}
	}
	b.opts.Builds.Put(key, index)
}

// traceOps reads a kept trace back.
func traceOps(v any) ([]traceOp, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	ops := make([]traceOp, 0, len(list))
	for _, e := range list {
		t, ok := e.([]any)
		if !ok || len(t) != 3 {
			return nil, false
		}
		op, _ := t[0].(string)
		path, _ := t[1].(string)
		answer, _ := t[2].(string)
		ops = append(ops, traceOp{op, path, answer})
	}
	return ops, true
}

// originFileOf is originFile for an object kept as a map: the file its origin annotation names
// (kustomize keeps it when the kustomization asks, buildMetadata originAnnotations).
func originFileOf(obj map[string]any, rel string) string {
	meta, _ := obj["metadata"].(map[string]any)
	anns, _ := meta["annotations"].(map[string]any)
	s, _ := anns["config.kubernetes.io/origin"].(string)
	if s == "" {
		return ""
	}
	var o resource.Origin
	if err := sigsyaml.Unmarshal([]byte(s), &o); err != nil || o.Path == "" {
		return ""
	}
	return path.Join(rel, o.Path)
}
