package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestOwnersGolden runs every case under testdata/owners: args (one per line) and input.yaml
// (on stdin) go in; output.txt holds stdout, stderr and the exit code.
func TestOwnersGolden(t *testing.T) {
	for _, dir := range golden.Cases(t, "owners") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Run(golden.Args(t, dir, "owners"), bytes.NewReader(input), &stdout, &stderr)
			golden.Check(t, filepath.Join(dir, "output.txt"), fmt.Sprintf("%s--- stderr\n%s--- exit %d\n", stdout.String(), stderr.String(), code))
		})
	}
}

func TestOwnersFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o644)
	os.WriteFile(b, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n"), 0o644)
	var stdout, stderr bytes.Buffer
	code := Run([]string{"owners", a, b}, nil, &stdout, &stderr)
	if code != ExitError || !strings.Contains(stdout.String(), a+": document 1 (line 1)") || !strings.Contains(stdout.String(), b+": document 1 (line 1)") {
		t.Errorf("exit %d, output:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run([]string{"owners", filepath.Join(dir, "missing.yaml")}, nil, &stdout, &stderr); code != ExitUnchecked || !strings.Contains(stderr.String(), "no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr.String())
	}
	if code := Run([]string{"owners", "-o", "xml"}, strings.NewReader(""), &stdout, &stderr); code != ExitError {
		t.Errorf("bad output: exit %d", code)
	}
}
