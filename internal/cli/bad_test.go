package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestBadInput runs every case under testdata/<command>/bad: args (one per line; {{dir}} is the case
// directory), input on stdin (none: an empty stdin), and want: "exit N" and a regular
// expression the stderr must match. No case may write to stdout: a failing render writes
// nothing, and the others report on stderr.
func TestBadInput(t *testing.T) {
	cases := golden.BadCases(t)
	if len(cases) < 40 {
		t.Fatalf("want at least 40 cases, found %d", len(cases))
	}
	for _, dir := range cases {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(dir)))+"/"+filepath.Base(dir), func(t *testing.T) {
			args := golden.Args(t, dir)
			want, err := os.ReadFile(filepath.Join(dir, "want"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(strings.TrimRight(string(want), "\n"), "\n", 2)
			code, err := strconv.Atoi(strings.TrimPrefix(lines[0], "exit "))
			if err != nil || len(lines) != 2 {
				t.Fatalf("want file: %q", want)
			}
			pattern := regexp.MustCompile(lines[1])
			input, _ := os.ReadFile(filepath.Join(dir, "input"))
			var stdout, stderr bytes.Buffer
			got := Run(args, bytes.NewReader(input), &stdout, &stderr)
			if got != code {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, code, stderr.String())
			}
			if !pattern.MatchString(stderr.String()) {
				t.Errorf("stderr does not match %q:\n%s", lines[1], stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote %d bytes to stdout", stdout.Len())
			}
		})
	}
}
