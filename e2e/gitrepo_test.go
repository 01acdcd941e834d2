package e2e

import (
	"encoding/json"
	"net/http/cgi"
	"net/http/httptest"
	"os"
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

// offlinePreview commits base to a new Git repository, writes head over it (the working tree,
// as a pull request's checkout), and returns diff tree's JSON of the working tree against HEAD,
// with no cluster (KUBECONFIG naming nothing) and exit 2 required, with its output for the
// test's messages; the document must hold one HelmRelease with its report.
func offlinePreview(t *testing.T, base, head map[string]string) (treeJSON, []byte) {
	t.Helper()
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=e2e@example.com", "-c", "user.name=e2e"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	writeFiles(t, repo, base)
	git("add", "-A")
	git("commit", "-qm", "base")
	writeFiles(t, repo, head)
	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), "diff", "tree", "--base", "HEAD", "--kube-version", "v1.34.2",
		"--chart-cache", filepath.Join(t.TempDir(), "cache"), "-o", "json")
	cmd.Dir, cmd.Env = repo, append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("diff tree: %v, want exit 2\n%s", err, out)
	}
	var doc treeJSON
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.HelmReleases) != 1 || doc.HelmReleases[0].Report == nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return doc, out
}
