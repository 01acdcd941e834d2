package action

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// The revisions of a tree diff are written out where TMPDIR says when it is set, else in
// memory (/dev/shm) on Linux.
func TestScratchDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := scratchDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "helm-drift-tree-") {
		t.Errorf("with TMPDIR=%s: %s", tmp, dir)
	}

	t.Setenv("TMPDIR", "")
	dir, err = scratchDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	want := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); runtime.GOOS == "linux" && err == nil && fi.IsDir() {
		want = "/dev/shm"
	}
	if filepath.Dir(dir) != want {
		t.Errorf("without TMPDIR: %s, want a directory in %s", dir, want)
	}
}

// TestOpenRevisionCache: a revision extracted once is kept in the cache by its commit, and a
// run after reads it from there, whole; a working tree is never kept; the cache keeps the
// most recently used revisions only, and clears what a run stopped halfway left.
func TestOpenRevisionCache(t *testing.T) {
	repo, work, cache := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "revisions")
	gitIn := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("init", "-q")
	write("apps/a.yaml", "a: 1\n")
	gitIn("add", "-A")
	gitIn("commit", "-qm", "base")
	base := gitIn("rev-parse", "HEAD")
	write("apps/a.yaml", "a: 2\n")
	gitIn("commit", "-qam", "head")

	first, err := OpenRevision(repo, "HEAD~1", work, cache)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(first.Dir, cache) {
		t.Fatalf("first open read %s from the cache, which was empty", first.Dir)
	}
	first.Close()
	kept := filepath.Join(cache, base)
	if data, err := os.ReadFile(filepath.Join(kept, "apps/a.yaml")); err != nil || string(data) != "a: 1\n" {
		t.Fatalf("kept revision: %q, %v", data, err)
	}
	second, err := OpenRevision(repo, "HEAD~1", work, cache)
	if err != nil {
		t.Fatal(err)
	}
	if second.Dir != kept || second.Commit != base || second.Name != "HEAD~1 ("+base[:7]+")" {
		t.Errorf("second open: %s %s %q, want the kept %s", second.Dir, second.Commit, second.Name, kept)
	}
	second.Close()
	if _, err := os.Stat(filepath.Join(kept, "apps/a.yaml")); err != nil {
		t.Errorf("closing a kept revision removed it: %v", err)
	}
	wt, err := OpenRevision(repo, "", work, cache)
	if err != nil {
		t.Fatal(err)
	}
	wt.Close()
	if es, _ := os.ReadDir(cache); len(es) != 1 {
		t.Errorf("the cache holds %d entries after a working tree was opened, want the one revision", len(es))
	}

	// Ten older revisions and a stale temporary directory: the head's, kept now, and the
	// seven most recent others stay.
	old := time.Now().Add(-2 * time.Hour)
	for i := range 10 {
		d := filepath.Join(cache, fmt.Sprintf("%040x", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(d, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
	}
	stale := filepath.Join(cache, ".tmp-stale")
	os.MkdirAll(stale, 0o755)
	os.Chtimes(stale, old, old)
	os.Chtimes(kept, old, old) // the least recently used of all
	head, err := OpenRevision(repo, "HEAD", work, cache)
	if err != nil {
		t.Fatal(err)
	}
	head.Close()
	var names []string
	es, _ := os.ReadDir(cache)
	for _, e := range es {
		names = append(names, e.Name())
	}
	want := []string{fmt.Sprintf("%040x", 3), fmt.Sprintf("%040x", 4), fmt.Sprintf("%040x", 5), fmt.Sprintf("%040x", 6),
		fmt.Sprintf("%040x", 7), fmt.Sprintf("%040x", 8), fmt.Sprintf("%040x", 9), gitIn("rev-parse", "HEAD")}
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("after pruning:\n%v\nwant\n%v", names, want)
	}
}
