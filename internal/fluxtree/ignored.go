package fluxtree

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ignoredFiles are the files of a Git working tree that Git ignores (.gitignore,
// .git/info/exclude, the global excludes): never committed, so never in a GitRepository's
// artifact, whatever the working tree holds (a decrypted copy of a SOPS file, an editor's
// backup). Directories Git ignores whole end with "/".
type ignoredFiles map[string]bool

// gitIgnored asks Git for the ignored files of the working tree at root (none when root is
// not one's top: an extracted revision holds committed files only).
func gitIgnored(root string) ignoredFiles {
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return nil
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory").Output()
	if err != nil {
		return nil
	}
	ig := ignoredFiles{}
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			ig[string(f)] = true
		}
	}
	return ig
}

// has says whether rel (slash-separated, relative to the root) is ignored: itself, or a
// directory above it.
func (ig ignoredFiles) has(rel string) bool {
	if len(ig) == 0 {
		return false
	}
	if ig[rel] || ig[rel+"/"] {
		return true
	}
	for d := rel; ; {
		i := strings.LastIndex(d, "/")
		if i < 0 {
			return false
		}
		d = d[:i]
		if ig[d+"/"] {
			return true
		}
	}
}
