package fluxtree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// kustomizeName is what kustomize's in-memory file system takes as the name of a directory it
// creates: the generated kustomization.yaml is written in memory at its absolute path, so
// every directory above it must have such a name. kustomize-controller builds in a temporary
// directory of its own, whose names always do; a checkout may not (a Jenkins workspace
// "job@2", a directory with a space).
// xref: sigs.k8s.io/kustomize/kyaml filesys/fsnode.go legalFileNamePattern.
var kustomizeName = regexp.MustCompile(`^[a-zA-Z0-9-_.:]+$`)

// kustomizable says whether every directory of the absolute path dir has a name kustomize's
// in-memory file system takes.
func kustomizable(dir string) bool {
	for _, name := range strings.Split(filepath.ToSlash(dir), "/") {
		if name != "" && !kustomizeName.MatchString(name) {
			return false
		}
	}
	return true
}

// kustomizableRoot is root, or, when kustomize could not build under it (kustomizable), a copy
// of its files under work that it can: the files Git does not ignore (ignored), .git left out,
// hard links where the file system allows them, symbolic links as they are.
func kustomizableRoot(root, work string, ignored ignoredFiles) (string, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	if kustomizable(real) {
		return root, nil
	}
	base := work
	if base == "" {
		base = os.TempDir()
	}
	dst, err := os.MkdirTemp(base, "tree-")
	if err != nil {
		return "", err
	}
	if !kustomizable(dst) {
		return "", fmt.Errorf("kustomize cannot build under %s (a directory's name holds a character other than letters, digits, '-', '_', '.', ':'), nor under the scratch directory %s: set TMPDIR to a directory whose path it can", root, dst)
	}
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real, p)
		slash := filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case d.Name() == ".git" || ignored.has(slash):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case !d.Type().IsRegular():
			return nil
		}
		if os.Link(p, to) == nil {
			return nil
		}
		return copyFile(p, to)
	})
	if err != nil {
		return "", fmt.Errorf("copy %s where kustomize can build it: %w", root, err)
	}
	return dst, nil
}
