// Package golden holds the tests' golden files: every case lives under the repository's
// testdata/<command>/ (a golden case in testdata/<command>/<case>/, a bad-input case in
// testdata/<command>/bad/<case>/), and "go test ./... -update" rewrites what the code now
// prints. Only tests import it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the code prints now")

// Updating reports whether -update was given.
func Updating() bool { return *update }

// Root is the repository's testdata directory.
func Root() string {
	return filepath.Join(RepoRoot(), "testdata")
}

// modulePath is the first line of the repository's go.mod.
const modulePath = "module github.com/helm-drift/helm-drift\n"

// RepoRoot is the repository's root directory: the nearest directory at or above the working
// directory (a test's is its package's) whose go.mod is this module's. The tests are built with
// -trimpath (see the Makefile), so the source file's own path does not tell. Outside the
// repository it returns the working directory.
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), modulePath) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// Cases returns the golden case directories of command (testdata/<command>/<case>), sorted;
// the bad-input cases (bad/) are not among them. It fails the test when there are none.
func Cases(t testing.TB, command string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(Root(), command, "*"))
	var cases []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && filepath.Base(d) != "bad" {
			cases = append(cases, d)
		}
	}
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases under %s: %v", filepath.Join(Root(), command), err)
	}
	return cases
}

// BadCases returns every bad-input case directory (testdata/*/bad/<case>), sorted.
func BadCases(t testing.TB) []string {
	t.Helper()
	cases, err := filepath.Glob(filepath.Join(Root(), "*", "bad", "*"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no bad-input cases under %s: %v", Root(), err)
	}
	return cases
}

// Args reads a case's args file (one argument per line; {{dir}} stands for the case
// directory) after the arguments first; a case without one has only first.
func Args(t testing.TB, dir string, first ...string) []string {
	t.Helper()
	args := append([]string{}, first...)
	raw, err := os.ReadFile(filepath.Join(dir, "args"))
	if os.IsNotExist(err) {
		return args
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if a != "" {
			args = append(args, strings.ReplaceAll(a, "{{dir}}", dir))
		}
	}
	return args
}

// Check compares got with the golden file path (a missing file is empty), or with -update
// writes it (an empty got removes it).
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		Write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got; go test -update rewrites it):\n%s", rel(path), d)
	}
}

// Write writes the golden file path; empty content removes it.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if content == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rel names path from the repository root.
func rel(path string) string {
	if r, err := filepath.Rel(filepath.Dir(Root()), path); err == nil {
		return r
	}
	return path
}
