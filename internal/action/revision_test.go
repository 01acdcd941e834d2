package action

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
