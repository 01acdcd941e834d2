package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnersGolden runs every case under testdata/owners: args (one per line) and input.yaml
// (on stdin) go in; output.txt holds stdout, stderr and the exit code.
func TestOwnersGolden(t *testing.T) {
	cases, err := filepath.Glob("../../testdata/owners/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{"owners"}
			if raw, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
				for _, a := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
					if a != "" {
						args = append(args, a)
					}
				}
			}
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Run(args, bytes.NewReader(input), &stdout, &stderr)
			got := fmt.Sprintf("%s--- stderr\n%s--- exit %d\n", stdout.String(), stderr.String(), code)
			path := filepath.Join(dir, "output.txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			compareGolden(t, path, got)
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
