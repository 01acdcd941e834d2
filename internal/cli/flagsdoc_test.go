package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestFlagReference: the committed docs/flags.md is what the flag sets generate (rewrite it
// with go test ./internal/cli -update, or bin/helm-drift __flags-md > docs/flags.md).
func TestFlagReference(t *testing.T) {
	golden.Check(t, filepath.Join(golden.Root(), "..", "docs", "flags.md"), flagReference())
}

// TestHelpInDocs: every "$ helm drift CMD --help" block in the README and docs/ is what the
// command prints now (a real output, not a copy that fell behind); -update rewrites them.
func TestHelpInDocs(t *testing.T) {
	// Defaults under the home directory (--keyring's) print as they do for the docs' user,
	// whatever HOME the tests run with.
	t.Setenv("HOME", "/root")
	root := filepath.Join(golden.Root(), "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	block := regexp.MustCompile("(?s)```\n\\$ (?:helm drift|helm-drift) ([a-z ]+?) --help\n(.*?)```")
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, m := range block.FindAllStringSubmatch(text, -1) {
			found++
			var out, errOut bytes.Buffer
			Run(append(strings.Fields(m[1]), "--help"), nil, &out, &errOut)
			if golden.Updating() {
				text = strings.Replace(text, m[0], strings.Replace(m[0], m[2], out.String(), 1), 1)
				continue
			}
			if d := cmp.Diff(m[2], out.String()); d != "" {
				t.Errorf("%s: helm drift %s --help is stale (-doc +now; go test ./internal/cli -update rewrites it):\n%s", filepath.Base(f), m[1], d)
			}
		}
		if golden.Updating() && text != string(data) {
			if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if found < 4 {
		t.Errorf("found %d --help blocks in the README and docs/; want render, owners, self and diff", found)
	}
}
