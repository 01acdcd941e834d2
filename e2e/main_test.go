package e2e

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/creack/pty"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// repoBin is held by the tests whose make targets write the repository's own bin/ (make image
// writes bin/linux-amd64/helm-drift), so that they may run in parallel with everything else.
var repoBin sync.Mutex

var (
	cluster    *testenv.Env // the test environment: API server, Flux controllers, registry
	toolsDir   string       // helm3, helm4, kustomize
	repoRoot   string       // this repository
	pluginCopy string       // a copy of the repository's tracked files, installed as the plugin
	setupLog   bytes.Buffer
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short")
		os.Exit(m.Run())
	}
	_, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n%s", err, setupLog.String())
		os.Exit(1)
	}
	defer os.RemoveAll(filepath.Dir(pluginCopy))
	os.Exit(testenv.Run(m, &cluster))
}

func setup() (int, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return 0, err
	}
	repoRoot = root
	out, err := exec.Command("bash", filepath.Join(root, "scripts/tools.sh")).Output()
	if err != nil {
		return 0, fmt.Errorf("scripts/tools.sh: %w", err)
	}
	toolsDir = strings.TrimSpace(string(out))
	tmp, err := os.MkdirTemp("", "helm-drift-e2e-")
	if err != nil {
		return 0, err
	}
	pluginCopy = filepath.Join(tmp, "helm-drift")
	if err := copyTracked(root, pluginCopy); err != nil {
		return 0, err
	}
	// Build the copy's binary once, the way the install hook does, so that tests running in
	// parallel all find it built.
	if out, err := exec.Command(filepath.Join(pluginCopy, "scripts/install.sh")).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("scripts/install.sh: %w\n%s", err, out)
	}
	return 0, nil
}

// copyTracked copies the repository's files (tracked and new, not ignored: no bin/) to dst, so
// the plugin's install hook builds from source exactly as a user's `helm plugin install` does.
func copyTracked(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Stat(src)
		if err != nil {
			continue // deleted in the work tree
		}
		target := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := copyFile(src, target, st.Mode()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// helmCLI is one helm binary with its own plugin, config, cache and data directories.
type helmCLI struct {
	name string // helm3, helm4
	bin  string
	env  []string
}

func newHelm(t *testing.T, name string) *helmCLI {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: needs the real helm CLI")
	}
	home := t.TempDir()
	h := &helmCLI{name: name, bin: filepath.Join(toolsDir, name)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HELM_") {
			h.env = append(h.env, kv)
		}
	}
	// Helm 4 installs a local plugin under HELM_DATA_HOME/plugins whatever HELM_PLUGINS says, and
	// loads plugins from HELM_PLUGINS: leave it unset so both are the same directory.
	h.env = append(h.env,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	return h
}

// run runs helm with args and returns stdout and stderr; it fails the test on a non-zero exit
// unless wantErr.
func (h *helmCLI) run(t *testing.T, wantErr bool, stdin []byte, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if wantErr && err == nil {
		t.Fatalf("%s %s: succeeded, want an error\nstdout:\n%s", h.name, strings.Join(args, " "), stdout.String())
	}
	if !wantErr && err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", h.name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// installPlugins installs the drift CLI plugin (and, for Helm 4, the drift-render post-renderer
// plugin) from the source copy; it returns what the install printed.
func (h *helmCLI) installPlugins(t *testing.T) string {
	t.Helper()
	out, _ := h.run(t, false, nil, "plugin", "install", pluginCopy)
	if h.name == "helm4" {
		o, _ := h.run(t, false, nil, "plugin", "install", filepath.Join(pluginCopy, "plugins/drift-render"))
		out += o
	}
	return out
}

// helmDrift runs the helm-drift binary the plugin install built, stdin on its standard input,
// and returns its stdout, stderr and exit code (-1 when it could not run).
func helmDrift(stdin string, args ...string) (string, string, int) {
	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	recordReport(args, stdout.String(), code)
	return stdout.String(), stderr.String(), code
}

// reportsSeen numbers the reports recordReport keeps.
var reportsSeen atomic.Int64

// recordReport keeps, in $HELM_DRIFT_E2E_REPORTS when set (scripts/test.sh sets it), the JSON
// report of every diff of one release the end-to-end tests run, with its arguments and exit
// code: internal/cli's TestExitCodeOneAndAll then judges each one as one release and as a row
// of --all, and wants the code the binary gave both ways.
func recordReport(args []string, stdout string, code int) {
	dir := os.Getenv("HELM_DRIFT_E2E_REPORTS")
	if dir == "" || len(args) < 2 || args[0] != "diff" || code < 0 || code > 3 {
		return
	}
	json := false
	for i, a := range args {
		switch {
		case a == "--all" || a == "-A" || a == "--all-contexts" || a == "--":
			return
		case a == "-o=json" || a == "--output=json" || (a == "-o" || a == "--output") && i+1 < len(args) && args[i+1] == "json":
			json = true
		}
	}
	if !json || !strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("report-%04d.txt", reportsSeen.Add(1)))
	os.WriteFile(name, []byte(fmt.Sprintf("%d\n%s\n%s", code, strings.Join(args, "\x00"), stdout)), 0o644)
}

// onTerminal runs helm-drift with args and env, its stdout (stdoutTTY) or its stderr on a
// pseudo-terminal, and returns what it wrote to the other stream, what it drew on the
// terminal, and its exit code.
func onTerminal(t *testing.T, env []string, stdoutTTY bool, args ...string) (piped, drawn string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(filepath.Join(pluginCopy, "bin/helm-drift"), args...)
	var other strings.Builder
	cmd.Env, cmd.Stdout, cmd.Stderr = append(env, "TERM=xterm"), &other, tty
	if stdoutTTY {
		cmd.Stdout, cmd.Stderr = tty, &other
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once the child has gone
		out <- string(b)
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return other.String(), <-out, code
}

// renderBinary runs `helm-drift render` and fails the test unless it fails exactly when wantErr.
func renderBinary(t *testing.T, wantErr bool, stdin []byte, args ...string) (string, string) {
	t.Helper()
	out, errOut, code := helmDrift(string(stdin), append([]string{"render"}, args...)...)
	if (code != 0) != wantErr {
		t.Fatalf("helm-drift render %s: exit %d, wantErr %v\nstderr:\n%s", strings.Join(args, " "), code, wantErr, errOut)
	}
	return out, errOut
}

// tokenKubeconfig writes a kubeconfig for server and a bearer token (TLS not verified).
func tokenKubeconfig(t *testing.T, server, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n", server, token)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
