package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestDefaultHookImage: a released build (a version and an image repository stamped) renders
// the resumer Job from its own image when --self-hook-image is not given; a pre-release or a
// build without a repository has no default and says so.
func TestDefaultHookImage(t *testing.T) {
	input, err := os.ReadFile(filepath.Join(golden.Root(), "render", "self-job", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"render", "--self", "--install", "--release=platform", "--namespace=flux-system",
		"--self-repository=oci://registry.example.internal/charts", "--kubeconfig=/nonexistent/kubeconfig", "--self-bracket=job"}
	defer func(v, r string) { version, imageRepository = v, r }(version, imageRepository)
	for _, tc := range []struct{ version, repo, want string }{
		{"v0.3.0", "registry.example.internal/tools/helm-drift", "image: registry.example.internal/tools/helm-drift:v0.3.0"},
		{"v0.3.0-dev", "registry.example.internal/tools/helm-drift", ""},
		{"v0.3.0", "", ""},
	} {
		version, imageRepository = tc.version, tc.repo
		var out, errOut bytes.Buffer
		code := Run(args, bytes.NewReader(input), &out, &errOut)
		switch {
		case tc.want != "" && (code != 0 || !strings.Contains(out.String(), tc.want)):
			t.Errorf("%s %q: exit %d, want the Job's %q\n%s", tc.version, tc.repo, code, tc.want, errOut.String())
		case tc.want == "" && (code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "needs --self-hook-image")):
			t.Errorf("%s %q: exit %d, want 1 asking for --self-hook-image\n%s", tc.version, tc.repo, code, errOut.String())
		}
	}
}

// TestCompletionYAML: the committed completion.yaml is what the flag sets generate.
func TestCompletionYAML(t *testing.T) {
	want, err := completionYAML()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../completion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("completion.yaml is stale: run bin/helm-drift __completion-yaml > completion.yaml")
	}
}

// TestCompleteArgs: plugin.complete's answers that need no cluster.
func TestCompleteArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--norm"}, ":4\n"},
		{[]string{"diff", "upgrade", "web", ""}, ":0\n"},
		{[]string{"version", ""}, ":4\n"},
		{nil, ":4\n"},
	} {
		var out bytes.Buffer
		if code := runComplete(tc.args, nil, &out, io.Discard); code != 0 || out.String() != tc.want {
			t.Errorf("%v: %q (exit %d), want %q", tc.args, out.String(), code, tc.want)
		}
	}
}
