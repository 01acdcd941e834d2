package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestRenderGolden runs every case under testdata/render: args (one per line, {{dir}} is the
// case directory) and input.yaml go in; expected.yaml (stdout; warnings.txt for stderr) or
// errors.txt (stderr, and then stdout must be empty) come out.
func TestRenderGolden(t *testing.T) {
	for _, dir := range golden.Cases(t, "render") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := golden.Args(t, dir, "render")
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Run(args, bytes.NewReader(input), &stdout, &stderr)
			errText := strings.ReplaceAll(stderr.String(), dir, "{{dir}}")
			if golden.Updating() {
				writeGolden(t, dir, code, stdout.String(), errText)
				return
			}
			if exists(filepath.Join(dir, "errors.txt")) {
				if code != ExitError {
					t.Errorf("exit code %d, want %d", code, ExitError)
				}
				if stdout.Len() != 0 {
					t.Errorf("render failed but wrote %d bytes to stdout", stdout.Len())
				}
				golden.Check(t, filepath.Join(dir, "errors.txt"), errText)
				return
			}
			if code != ExitOK {
				t.Fatalf("exit code %d, stderr:\n%s", code, errText)
			}
			golden.Check(t, filepath.Join(dir, "expected.yaml"), stdout.String())
			golden.Check(t, filepath.Join(dir, "warnings.txt"), errText)
		})
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// writeGolden writes a render case's outcome: errors.txt when it failed, else expected.yaml
// and warnings.txt.
func writeGolden(t *testing.T, dir string, code int, stdout, stderr string) {
	t.Helper()
	failed := code != ExitOK
	pick := func(ok bool, s string) string {
		if ok {
			return s
		}
		return ""
	}
	golden.Write(t, filepath.Join(dir, "errors.txt"), pick(failed, stderr))
	golden.Write(t, filepath.Join(dir, "expected.yaml"), pick(!failed, stdout))
	golden.Write(t, filepath.Join(dir, "warnings.txt"), pick(!failed, stderr))
}

// TestRenderUntouchedIsIdentical: with rules that select nothing in a document, every other
// document is byte-identical; with no rules at all, the whole stream is.
func TestRenderUntouchedIsIdentical(t *testing.T) {
	input, err := os.ReadFile(filepath.Join(golden.Root(), "render", "select-by-name", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"render"}, bytes.NewReader(input), &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), input) {
		t.Errorf("a render with no rules changed the stream")
	}
	if stderr.Len() != 0 {
		t.Errorf("unexpected stderr: %s", stderr.String())
	}
}

func TestRenderInputErrors(t *testing.T) {
	tests := map[string]struct {
		args  []string
		input string
		want  string
	}{
		"unknown flag":      {[]string{"render", "--drift"}, "", "unknown flag: --drift"},
		"argument":          {[]string{"render", "file.yaml"}, "", `unexpected argument "file.yaml"`},
		"flag without mode": {[]string{"render", "--drift-detection", "podinfo"}, "", "want SELECTOR=MODE"},
		"unknown mode":      {[]string{"render", "--drift-detection", "podinfo=on"}, "", `unknown drift detection mode "on"`},
		"bad selector":      {[]string{"render", "--drift-detection", "a/b/c=warn"}, "", `more than one "/"`},
		"missing config":    {[]string{"render", "--config", "/nonexistent/c.yaml"}, "", "config /nonexistent/c.yaml: no such file"},
		"glued separator":   {[]string{"render"}, "a: 1\n---kind: x\n", "a document separator must be followed by a space"},
		"binary":            {[]string{"render"}, "\x00\x01\x02", "control character 0x00"},
		"unknown command":   {[]string{"rendr"}, "", `unknown command "rendr"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, strings.NewReader(tc.input), &stdout, &stderr)
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote to stdout on failure: %q", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestRenderHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"render", "--help"}, nil, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--drift-detection", "--config", "--override", "--strict", "Exit codes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"version"}, nil, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"helm-drift ", "go:       go1.", "helm sdk: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version output %q lacks %q", stdout.String(), want)
		}
	}
}

// TestDevNullIsEmptyNotTerminal: /dev/null (what a closed stdin becomes) is an empty stream,
// not refused as a terminal.
func TestDevNullIsEmptyNotTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := readInput(f)
	if err != nil || len(data) != 0 {
		t.Errorf("readInput(/dev/null) = %q, %v; want empty, no error", data, err)
	}
}
