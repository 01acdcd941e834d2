package golden

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFuzzTargetsListed: scripts/fuzz.sh (make fuzz, .ci/run's smokes) runs every fuzz target
// of the module, each under its own package, and names none that does not exist.
func TestFuzzTargetsListed(t *testing.T) {
	root := RepoRoot()
	script, err := os.ReadFile(filepath.Join(root, "scripts", "fuzz.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s+"([a-z/]+):([A-Za-z0-9 ]+)"$`).FindAllStringSubmatch(string(script), -1) {
		for _, target := range strings.Fields(m[2]) {
			listed = append(listed, m[1]+"."+target)
		}
	}
	var defined []string
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
			return filepath.SkipDir // another module (scripts/...) or not Go
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			defined = append(defined, filepath.ToSlash(rel)+"."+m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(defined)
	if len(defined) == 0 || !slices.Equal(listed, defined) {
		t.Errorf("scripts/fuzz.sh lists %v,\nthe module defines %v", listed, defined)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
