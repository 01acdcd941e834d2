package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// ciTree is a Flux repository whose chart is in the repository itself: no source to reach.
var ciTree = map[string]string{
	"apps/web.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://git.example.com/fleet.git, interval: 1m, ref: {branch: main}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: ./charts/webapp, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}
  values: {replicas: 1}
`,
}

// stickyHost stands in for GitHub's or GitLab's comments API (no machine here reaches either):
// it keeps the comments posted, edited and deleted.
type stickyHost struct {
	mu       sync.Mutex
	comments map[int64]string
	next     int64
}

func (s *stickyHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer t0ken" && r.Header.Get("PRIVATE-TOKEN") != "t0ken" {
		http.Error(w, "{}", http.StatusUnauthorized)
		return
	}
	var in struct{ Body string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	parts := strings.Split(strings.TrimSuffix(r.URL.Path, "/"), "/")
	id, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	switch {
	case r.Method == http.MethodGet:
		var out []map[string]any
		if r.URL.Query().Get("page") == "1" {
			for k, v := range s.comments {
				out = append(out, map[string]any{"id": k, "body": v})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodPost:
		s.next++
		s.comments[s.next] = in.Body
		_ = json.NewEncoder(w).Encode(map[string]any{"id": s.next, "body": in.Body})
	case err == nil && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		s.comments[id] = in.Body
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "body": in.Body})
	case err == nil && r.Method == http.MethodDelete:
		delete(s.comments, id)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

// runScript runs a CI step's script with bash in dir.
func runScript(t *testing.T, dir, script string, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestCIStep runs the scripts of the GitHub Action (action.yml) and of the GitLab template as
// their runners would, on a repository made by the test: the preview's exit code reaches the
// step's output, the job summary holds it, the sticky comment is created once and then left as
// it is, and the verdict fails the step as fail-on says.
func TestCIStep(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	files := map[string]string{}
	for k, v := range ciTree {
		files[k] = v
	}
	copyDir(t, filepath.Join(repoRoot, "testdata/charts/webapp"), filepath.Join(repo, "charts/webapp"))
	writeFiles(t, repo, files)
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=e2e@example.com", "-c", "user.name=e2e"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")
	writeFiles(t, repo, map[string]string{"apps/web.yaml": strings.Replace(ciTree["apps/web.yaml"], "replicas: 1", "replicas: 3", 1)})
	git("commit", "-qam", "head")

	temp := t.TempDir()
	if err := os.Symlink(filepath.Join(pluginCopy, "bin/helm-drift"), filepath.Join(temp, "helm-drift")); err != nil {
		t.Fatal(err)
	}
	host := &stickyHost{comments: map[int64]string{}}
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)
	event := filepath.Join(temp, "event.json")
	writeFiles(t, temp, map[string]string{"event.json": `{"number": 7, "pull_request": {"number": 7}}`})

	// GitHub: the action's steps, by name.
	data, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs struct {
			Steps []struct {
				Name string `json:"name"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := sigsyaml.Unmarshal(data, &action); err != nil {
		t.Fatal(err)
	}
	step := map[string]string{}
	for _, s := range action.Runs.Steps {
		step[s.Name] = s.Run
	}
	output, summary := filepath.Join(temp, "output"), filepath.Join(temp, "summary")
	out, code := runScript(t, repo, step["helm drift diff tree"], "RUNNER_TEMP="+temp, "BASE="+base, "PATHS=", "COMMENTS=2",
		"ARGS=--kube-version v1.34.2 --chart-cache off", "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary)
	got, _ := os.ReadFile(output)
	sum, _ := os.ReadFile(summary)
	if code != 0 || strings.TrimSpace(string(got)) != "exit-code=2" || !strings.Contains(string(sum), "### helm-drift") || !strings.Contains(string(sum), "apps/web") {
		t.Fatalf("the diff tree step: exit %d, output %q\n%s\nsummary:\n%s", code, got, out, sum)
	}
	if html, err := os.ReadFile(filepath.Join(temp, "helm-drift-preview.html")); err != nil || !strings.Contains(string(html), "<html") {
		t.Errorf("no HTML preview for the artifact: %v", err)
	}
	ghEnv := []string{"RUNNER_TEMP=" + temp, "GITHUB_ACTIONS=true", "GITHUB_API_URL=" + srv.URL, "GITHUB_REPOSITORY=org/fleet", "GITHUB_EVENT_PATH=" + event, "GITHUB_TOKEN=t0ken"}
	for i, want := range []string{"part 1 created", "part 1 unchanged"} {
		out, code := runScript(t, repo, step["Sticky comment"], ghEnv...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sticky comment, run %d: exit %d, want %q:\n%s", i+1, code, want, out)
		}
	}
	if len(host.comments) != 1 {
		t.Errorf("%d comments, want one sticky comment", len(host.comments))
	}
	for _, c := range []struct {
		failOn, code string
		want         int
	}{{"unrendered", "2", 0}, {"unrendered", "3", 1}, {"change", "2", 1}, {"never", "3", 0}} {
		if _, got := runScript(t, repo, step["Verdict"], "CODE="+c.code, "FAIL_ON="+c.failOn); got != c.want {
			t.Errorf("verdict with fail-on %s and exit %s: %d, want %d", c.failOn, c.code, got, c.want)
		}
	}

	// The sops-age-key input reaches diff tree as $SOPS_AGE_KEY: one that is no age identity
	// fails the step, named.
	out, code = runScript(t, repo, step["helm drift diff tree"], "RUNNER_TEMP="+temp, "BASE="+base, "PATHS=", "COMMENTS=2",
		"ARGS=--kube-version v1.34.2 --chart-cache off", "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary, "SOPS_AGE_KEY_INPUT=not-an-age-key")
	if code != 1 || !strings.Contains(out, "$SOPS_AGE_KEY") {
		t.Errorf("the diff tree step with a sops-age-key that is not one: exit %d, want 1 naming $SOPS_AGE_KEY\n%s", code, out)
	}
	// The sops-pgp-key input reaches diff tree as a key file, removed after the step: a PGP key
	// is taken (the same preview, exit 2), and one that is not fails the step, named.
	pgpKey, err := os.ReadFile(filepath.Join(repoRoot, "testdata/sops/pgp.asc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, want string
		code      int
	}{{string(pgpKey), "exit-code=2", 0}, {"not-a-pgp-key", "--sops-pgp-key-file", 1}} {
		os.Remove(output)
		out, code = runScript(t, repo, step["helm drift diff tree"], "RUNNER_TEMP="+temp, "BASE="+base, "PATHS=", "COMMENTS=2",
			"ARGS=--kube-version v1.34.2 --chart-cache off", "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary, "SOPS_PGP_KEY_INPUT="+c.key)
		got, _ := os.ReadFile(output)
		if code != c.code || !strings.Contains(out+string(got), c.want) {
			t.Errorf("the diff tree step with a sops-pgp-key %.20q: exit %d, want %d and %q\n%s%s", c.key, code, c.code, c.want, out, got)
		}
		if _, err := os.Stat(filepath.Join(temp, "helm-drift-pgp.asc")); !os.IsNotExist(err) {
			t.Errorf("the PGP key file is left in RUNNER_TEMP: %v", err)
		}
	}

	// GitLab: the template's script after it builds helm-drift (helm-drift on PATH instead).
	data, err = os.ReadFile(filepath.Join(repoRoot, "ci/gitlab/helm-drift.gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]struct {
		Script []string `json:"script"`
	}
	if err := sigsyaml.Unmarshal(data, &tpl); err != nil {
		t.Fatal(err)
	}
	script := tpl[".helm-drift-diff-tree"].Script
	if len(script) != 3 || !strings.Contains(script[0], "git clone") || !strings.Contains(script[1], "go build") {
		t.Fatalf("the template's script changed shape: %q", script)
	}
	host.comments = map[int64]string{}
	glEnv := []string{"PATH=" + temp + ":" + os.Getenv("PATH"), "GITLAB_CI=true", "CI_API_V4_URL=" + srv.URL, "CI_PROJECT_ID=12", "CI_MERGE_REQUEST_IID=3",
		"GITLAB_TOKEN=t0ken", "CI_MERGE_REQUEST_DIFF_BASE_SHA=" + base, "HELM_DRIFT_PATHS=", "HELM_DRIFT_ARGS=--kube-version v1.34.2",
		"HELM_DRIFT_COMMENTS=2", "HELM_DRIFT_FAIL_ON=unrendered"}
	if out, code := runScript(t, repo, script[2], glEnv...); code != 0 || !strings.Contains(out, "part 1 created") || len(host.comments) != 1 {
		t.Errorf("the GitLab job: exit %d, %d notes:\n%s", code, len(host.comments), out)
	}
	if _, err := os.Stat(filepath.Join(repo, "helm-drift-preview.html")); err != nil {
		t.Errorf("the GitLab job keeps no HTML preview: %v", err)
	}
	// Its caches, in the checkout where GitLab keeps them, filled and ignored by Git: the base's
	// files kept there are never read as the repository's.
	if es, err := os.ReadDir(filepath.Join(repo, ".helm-drift-cache/builds/revisions")); err != nil || len(es) != 1 {
		t.Errorf("the GitLab job's build cache: %d revisions kept (%v), want the base", len(es), err)
	}
	if out, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--ignored=no").Output(); err != nil || strings.Contains(string(out), ".helm-drift-cache") {
		t.Errorf("the GitLab job's caches are not ignored by Git (%v):\n%s", err, out)
	}
	// HELM_DRIFT_SOPS_PGP_KEY_FILE reaches diff tree: a file that is no key fails the job, named.
	notKey := filepath.Join(temp, "not-a-key.asc")
	if err := os.WriteFile(notKey, []byte("not-a-pgp-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := runScript(t, repo, script[2], append(glEnv, "HELM_DRIFT_SOPS_PGP_KEY_FILE="+notKey)...); code != 1 || !strings.Contains(out, "--sops-pgp-key-file") {
		t.Errorf("the GitLab job with a HELM_DRIFT_SOPS_PGP_KEY_FILE that is no key: exit %d, want 1 naming the flag:\n%s", code, out)
	}
}
