package action

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/helm-drift/helm-drift/internal/objcache"
)

// Checkout is one side of a tree diff on disk: a directory as given, or a Git revision
// extracted into a temporary directory.
type Checkout struct {
	// Dir is the tree's root.
	Dir string
	// Name says what it is: "the working tree", "main (3f2a1c9)", a directory.
	Name string
	// RemoteURL is the repository's origin URL ("" when unknown).
	RemoteURL string
	// Commit is the commit it is: the revision's, or the checkout's HEAD for a directory ("" outside Git).
	Commit  string
	cleanup func()
	// kept waits until the revision is kept in the cache (see keepRevision).
	kept func()
}

// Close removes an extracted revision, once it is kept in the cache when it is kept.
func (c *Checkout) Close() {
	if c.kept != nil {
		c.kept()
	}
	if c.cleanup != nil {
		c.cleanup()
	}
}

// OpenRevision opens rev of the repository at repo: a directory when rev names one (or rev is
// "": repo's working tree itself), else a Git revision (branch, tag, commit, HEAD~1) extracted
// with git archive into a directory under work. With a cache directory ("": none), a revision is
// read from there when a run before kept it (by its commit, which names what git archive writes
// exactly), and kept there for the runs after (a pull request's pushes share their base).
func OpenRevision(repo, rev, work, cache string) (*Checkout, error) {
	// A directory: its origin and, when it is a checkout's root, its HEAD, asked at once.
	dir := func(d, name string) *Checkout {
		c := &Checkout{Dir: d, Name: name}
		var wg sync.WaitGroup
		wg.Go(func() { c.RemoteURL = gitOutput(d, "remote", "get-url", "origin") })
		wg.Go(func() {
			top, head, _ := strings.Cut(gitOutput(d, "rev-parse", "--show-toplevel", "HEAD"), "\n")
			if real, err := filepath.EvalSymlinks(d); err == nil && top == filepath.ToSlash(real) {
				c.Commit = head
			}
		})
		wg.Wait()
		return c
	}
	if rev == "" {
		return dir(repo, "the working tree"), nil
	}
	if fi, err := os.Stat(rev); err == nil && fi.IsDir() {
		abs, _ := filepath.Abs(rev)
		return dir(abs, rev), nil
	}
	// The two questions to git at once, each a process of its own: the origin, and the
	// revision's commit.
	var remote, commit string
	var wg sync.WaitGroup
	wg.Go(func() { remote = gitOutput(repo, "remote", "get-url", "origin") })
	wg.Go(func() { commit = gitOutput(repo, "rev-parse", "--verify", "--quiet", rev+"^{commit}") })
	wg.Wait()
	if commit == "" {
		top := gitOutput(repo, "rev-parse", "--show-toplevel")
		if top == "" {
			return nil, &InputError{Err: fmt.Errorf("%q is neither a directory nor a Git revision: %s is not in a Git repository", rev, repo)}
		}
		return nil, &InputError{Err: fmt.Errorf("%q is neither a directory nor a revision of the repository at %s (a branch, tag or commit; fetch it first in a shallow CI clone: git fetch origin %s)", rev, top, rev)}
	}
	name := fmt.Sprintf("%s (%.7s)", rev, commit)
	if dir := cachedRevision(cache, commit); dir != "" {
		return &Checkout{Dir: dir, Name: name, RemoteURL: remote, Commit: commit}, nil
	}
	// git archive writes the files of the directory it runs in: it runs at the top.
	top := gitOutput(repo, "rev-parse", "--show-toplevel")
	var tarball, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", top, "archive", "--format=tar", commit)
	cmd.Stdout, cmd.Stderr = &tarball, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git archive %s: %v: %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	archive := tarball.Bytes()
	out, err := extract(archive, work)
	remove := out
	if errors.Is(err, syscall.ENOSPC) && filepath.Dir(work) != filepath.Clean(os.TempDir()) {
		// A scratch directory in memory too small for the repository: the system's
		// temporary directory instead.
		if remove, err = os.MkdirTemp("", "helm-drift-rev-"); err == nil {
			if out, err = extract(archive, remove); err != nil {
				os.RemoveAll(remove)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("git archive %s: %w", rev, err)
	}
	return &Checkout{Dir: out, Name: name, RemoteURL: remote, Commit: commit, cleanup: func() { os.RemoveAll(remove) },
		kept: keepRevision(archive, cache, commit)}, nil
}

// keptRevisions is how many revisions a cache keeps: the least recently used go first.
const keptRevisions = 8

// cachedRevision is the directory the cache keeps the files of commit in, "" when it keeps none
// (or there is no cache). Its use is recorded, for keepRevision's pruning.
func cachedRevision(cache, commit string) string {
	if cache == "" || !isObjectName(commit) {
		return ""
	}
	dir := filepath.Join(cache, commit)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	return dir
}

// keepRevision writes the files of commit (archive, git archive's) into the cache, beside the
// run that reads them from its scratch directory, and returns a func that waits until it is
// done (nil when there is no cache). They are written under a temporary name and renamed into
// place whole, so that a run never reads half of them; then the cache is pruned to
// keptRevisions. Failing to keep them is not an error: the cache only saves work.
func keepRevision(archive []byte, cache, commit string) func() {
	if cache == "" || !isObjectName(commit) {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return
		}
		tmp, err := os.MkdirTemp(cache, ".tmp-")
		if err != nil {
			return
		}
		if untar(bytes.NewReader(archive), tmp) != nil || os.Rename(tmp, filepath.Join(cache, commit)) != nil {
			os.RemoveAll(tmp) // or another run kept it first
			return
		}
		pruneRevisions(cache)
	}()
	return func() { <-done }
}

// pruneRevisions removes all but the keptRevisions most recently used revisions of the cache,
// and what a run stopped halfway left.
func pruneRevisions(cache string) {
	objcache.PruneDir(cache, keptRevisions, func(e fs.DirEntry) bool { return e.IsDir() && isObjectName(e.Name()) })
}

// isObjectName: a Git object name (SHA-1 or SHA-256, in hex).
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// extract writes a tar archive's files into a new directory under parent, and removes it
// again when that fails.
func extract(archive []byte, parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "rev-")
	if err != nil {
		return "", err
	}
	if err := untar(bytes.NewReader(archive), dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// scratchDir makes the directory a run extracts revisions under: in $TMPDIR when it is set;
// else, on Linux, in the memory-backed /dev/shm when it can (there, writing out a revision of
// 200 files took 7 ms where the disk of this project's CI machines took 126 ms, and as long
// again to remove it); else in the system's temporary directory. A revision too large for
// /dev/shm is extracted to the system's temporary directory instead (OpenRevision).
func scratchDir() (string, error) {
	if os.Getenv("TMPDIR") == "" && runtime.GOOS == "linux" {
		if dir, err := os.MkdirTemp("/dev/shm", "helm-drift-tree-"); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", "helm-drift-tree-")
}

// RepositoryRoot is the root of the Git work tree holding dir, or dir itself outside Git.
func RepositoryRoot(dir string) string {
	if top := gitOutput(dir, "rev-parse", "--show-toplevel"); top != "" {
		return top
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// gitOutput runs git in dir and returns its trimmed output ("" on any failure).
func gitOutput(dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// untar extracts a tar stream of regular files and directories into dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("unsafe path %q", h.Name)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
