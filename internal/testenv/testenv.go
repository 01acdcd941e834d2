// Package testenv gives end-to-end tests a real cluster: it builds (once, cached) and starts the
// environment of scripts/testenv — a real kube-apiserver with embedded etcd, the Flux CRDs,
// source-controller, helm-controller, kustomize-controller, notification-controller and an
// in-memory OCI registry, all on loopback — and stops exactly what it started. One environment per test binary (call Main from TestMain),
// one namespace per test (Namespace). It is for tests only; the product never imports it.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/golden"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is a running test environment.
type Env struct {
	// Dir holds the environment's state: env, kubeconfig, pids, logs/.
	Dir string
	// Bin is the cache directory with the built binaries (helm3 and helm4 are in ../bin).
	Bin string
	// Kubeconfig is the path of an admin kubeconfig (token auth, RBAC, system:masters).
	Kubeconfig string
	// Registry is the OCI registry's host:port (plain HTTP).
	Registry string
	// Events is notification-controller's event endpoint (http://host:port), where Flux's
	// controllers post their events.
	Events string
	// Config, Kube and Dynamic talk to the API server as admin.
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Startup is how long up took (building included when something was missing).
	Startup time.Duration
}

// RepoRoot is the repository the test runs in (see golden.RepoRoot).
func RepoRoot() string { return golden.RepoRoot() }

// Start builds what is missing and starts an environment in a new temporary directory.
func Start() (*Env, error) {
	start := time.Now()
	root := RepoRoot()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "scripts/testenv/build.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/testenv/build.sh: %w\n%s", err, stderr.String())
	}
	bin := strings.TrimSpace(string(out))
	dir, err := os.MkdirTemp("", "helm-drift-testenv-")
	if err != nil {
		return nil, err
	}
	up := exec.Command(filepath.Join(bin, "ctl"), "up", "-dir", dir, "-bin", bin)
	if out, err := up.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testenv up: %w\n%s", err, out)
	}
	e := &Env{Dir: dir, Bin: bin, Kubeconfig: filepath.Join(dir, "kubeconfig"), Startup: time.Since(start)}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.Registry = vars["TESTENV_REGISTRY"]
	e.Events = vars["TESTENV_EVENTS"]
	if e.Config, err = clientcmd.BuildConfigFromFlags("", e.Kubeconfig); err != nil {
		e.Stop()
		return nil, err
	}
	e.Config.QPS, e.Config.Burst = 100, 200
	if e.Kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		e.Stop()
		return nil, err
	}
	if e.Dynamic, err = dynamic.NewForConfig(e.Config); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	return vars, sc.Err()
}

// Stop stops exactly the processes Start started and removes the directory.
func (e *Env) Stop() error {
	out, err := exec.Command(filepath.Join(e.Bin, "ctl"), "down", "-dir", e.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("testenv down: %w\n%s", err, out)
	}
	return os.RemoveAll(e.Dir)
}

// Logs returns the tail of every process's log.
func (e *Env) Logs() string {
	out, _ := exec.Command(filepath.Join(e.Bin, "ctl"), "logs", "-dir", e.Dir).CombinedOutput()
	return string(out)
}

// Log returns one process's whole log (kube-apiserver, helm-controller, source-controller,
// kustomize-controller, notification-controller, registry).
func (e *Env) Log(name string) string {
	data, _ := os.ReadFile(filepath.Join(e.Dir, "logs", name+".log"))
	return string(data)
}

// HelmBin returns the path of helm3 or helm4.
func (e *Env) HelmBin(name string) string {
	return filepath.Join(filepath.Dir(e.Bin), "bin", name)
}

// Run runs a test binary's tests against one environment and returns the exit code: not
// started under -short, stopped after the tests, its logs printed when a test failed. Call it
// from TestMain: os.Exit(testenv.Run(m, &env)).
func Run(m *testing.M, env **Env) int {
	if !testingShort() {
		e, err := Start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return 1
		}
		fmt.Printf("testenv: started in %.1fs (%s)\n", e.Startup.Seconds(), e.Dir)
		*env = e
		defer func() {
			if err := e.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			}
		}()
	}
	code := m.Run()
	if code != 0 && *env != nil {
		fmt.Fprintf(os.Stderr, "testenv: a test failed; the environment's logs:\n%s", (*env).Logs())
		// Last, where the tail of a long output shows it: which tests failed (their own
		// output, --- FAIL, is above the logs).
		failedMu.Lock()
		fmt.Fprintf(os.Stderr, "testenv: failed, among the tests with a namespace of their own: %s\n", strings.Join(failed, ", "))
		failedMu.Unlock()
	}
	return code
}

// failed names the tests that failed after asking for a namespace (Namespace), for Run's
// summary.
var (
	failedMu sync.Mutex
	failed   []string
)

// testingShort reads -short before m.Run has parsed flags.
func testingShort() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" || a == "--test.short" {
			return true
		}
	}
	return false
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for one test, named after it, and returns its name. Tests
// are skipped under -short or when no environment is running.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	if e == nil {
		t.Skip("testenv: no environment (-short)")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + hex.EncodeToString(suffix)
	t.Cleanup(func() {
		if t.Failed() {
			failedMu.Lock()
			failed = append(failed, t.Name())
			failedMu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// Eventually polls cond every interval until it returns true or timeout passes; then it fails
// the test with the last message cond gave.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		var ok bool
		ok, msg = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, msg)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Mapper maps kinds to resources as the API server serves them now (discovery read afresh on
// each call, so CRDs a test installed are found).
func (e *Env) Mapper() meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
}
