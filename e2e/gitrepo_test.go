package e2e

import (
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitServer serves the Git repositories under root over Git's smart HTTP protocol (git
// http-backend), as a GitRepository reads them: root/fleet is URL/fleet.
func gitServer(t *testing.T, root string) *httptest.Server {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	t.Cleanup(srv.Close)
	return srv
}

// pullRequest makes repo a Git repository whose main holds base and whose branch pr holds head
// on top of it, main checked out; it returns a runner of git in repo.
func pullRequest(t *testing.T, repo string, base, head map[string]string) func(args ...string) {
	t.Helper()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=e2e@example.com", "-c", "user.name=e2e"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if out, err := exec.Command("git", "init", "-q", "-b", "main", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	writeFiles(t, repo, base)
	git("add", "-A")
	git("commit", "-qm", "base")
	git("checkout", "-qb", "pr")
	writeFiles(t, repo, head)
	git("add", "-A")
	git("commit", "-qm", "the pull request")
	git("checkout", "-q", "main")
	return git
}
