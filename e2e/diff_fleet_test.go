package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestDiffFleet: two test environments measured in one run, as two contexts of one kubeconfig
// (--kube-context twice, then --all-contexts). The first has a drifted release; the second is
// stopped in the middle of the run, after its releases were listed; a third context's server
// is not there at all. One summary: the first cluster's drift, "could not measure" for the
// second's releases and a row for the third; exit 3; JSON names every context and server.
func TestDiffFleet(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	h := clusterHelm(t, "helm3")
	second, err := testenv.Start()
	if err != nil {
		t.Fatalf("a second test environment: %v", err)
	}
	var stopped atomic.Bool
	defer func() {
		if !stopped.Load() {
			second.Stop()
		}
	}()

	// The first cluster: two releases, one of them drifted.
	ns := cluster.Namespace(t)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "headless=true")
	h.run(t, false, nil, "install", "api", "testdata/charts/webapp", "-n", ns, "--set", "headless=true")
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	// The second cluster: one clean release, installed by the same Helm.
	h2 := newHelm(t, "helm3")
	h2.env = append(h2.env, "KUBECONFIG="+second.Kubeconfig)
	if _, err := second.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h2.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "headless=true")

	// The second cluster is reached through a proxy that stops it once the release storage has
	// been listed: what a cluster going away mid-run looks like.
	var once sync.Once
	var armed atomic.Bool
	front := testenv.APIFront(t, second.Config, true, func(w http.ResponseWriter, r *http.Request, forward func() int) {
		forward()
		if armed.Load() && strings.HasSuffix(r.URL.Path, "/secrets") && strings.Contains(r.URL.Query().Get("labelSelector"), "owner=helm") {
			once.Do(func() {
				if err := second.Stop(); err != nil {
					t.Errorf("stopping the second environment: %v", err)
				}
				stopped.Store(true)
			})
		}
	})

	kubeconfig := fleetKubeconfig(t, map[string]string{"first": cluster.Config.Host, "second": front.URL, "third": "https://127.0.0.1:1"}, cluster.Kubeconfig)
	args := []string{"release", "--all", "-n", ns, "--kubeconfig", kubeconfig, "--kube-context", "first", "--kube-context", "second", "--kube-context", "third"}

	// Before the second stops: both clusters measured, the drift on the first.
	out, errOut, code := diffBinary(t, append(slices.Clone(args[:len(args)-2]), "-o", "json")...)
	var doc struct {
		CheckedAt string `json:"checkedAt"`
		Clusters  []struct {
			CheckedAt, Context, Server, Error string
		} `json:"clusters"`
		Releases []struct {
			Context, Release, Namespace, Error string
			Divergences                        int
		} `json:"releases"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s\n%s", err, out, errOut)
	}
	rows := map[string]int{}
	for _, r := range doc.Releases {
		if r.Namespace == ns {
			rows[r.Context+"/"+r.Release] = r.Divergences
		}
	}
	if code != 2 || len(doc.Clusters) != 2 || doc.Clusters[0].Server != cluster.Config.Host || doc.Clusters[1].Server != front.URL ||
		rows["first/web"] == 0 || rows["first/api"] != 0 || rows["second/web"] != 0 || len(rows) != 3 || doc.CheckedAt == "" {
		t.Fatalf("two clusters: exit %d, clusters %+v, rows %v, want exit 2, both servers, the drift on first/web only\n%s\n%s", code, doc.Clusters, rows, out, errOut)
	}

	// The second stops mid-run, the third is not there: one table, exit 3.
	armed.Store(true)
	out, errOut, code = diffBinary(t, args...)
	t.Logf("the fleet, one cluster stopped mid-run, one absent:\n%s%s", out, errOut)
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			lines[f[0]+" "+f[1]] = l
		}
	}
	switch {
	case code != 3:
		t.Errorf("exit %d, want 3 (a cluster could not be measured)", code)
	case !strings.HasPrefix(out, "CONTEXT  RELEASE"):
		t.Errorf("no CONTEXT column:\n%s", out)
	case !strings.Contains(lines["first "+ns+"/web"], "/") || strings.Contains(lines["first "+ns+"/web"], "could not") || strings.HasPrefix(strings.Fields(lines["first "+ns+"/web"])[2], "0/"):
		t.Errorf("first/web: %q, want its drift", lines["first "+ns+"/web"])
	case !strings.Contains(lines["second "+ns+"/web"], "could not measure"):
		t.Errorf("second/web: %q, want could not measure (the cluster stopped after listing it)", lines["second "+ns+"/web"])
	case !strings.Contains(lines["third -"], "could not measure the cluster"):
		t.Errorf("third: %q, want one row: could not measure the cluster", lines["third -"])
	case !strings.Contains(out, `against context "first" (`+cluster.Config.Host+`)`) || !strings.Contains(out, `context "third" (https://127.0.0.1:1)`):
		t.Errorf("the footer does not say when and against what:\n%s", out)
	case !strings.Contains(errOut, "could not measure context third"):
		t.Errorf("stderr does not name the cluster that could not be measured:\n%s", errOut)
	case strings.Contains(errOut, "memcache.go"):
		t.Errorf("client-go's own log lines on stderr:\n%s", errOut)
	}

	// --all-contexts: every context of the kubeconfig, the same rows for the first.
	out, _, code = diffBinary(t, "release", "-n", ns, "--all", "--kubeconfig", kubeconfig, "--all-contexts", "-o", "markdown")
	if code != 3 || !strings.Contains(out, "| CONTEXT | RELEASE |") || !strings.Contains(out, "| first | "+ns+"/web |") || !strings.Contains(out, "| third | - | could not measure the cluster") {
		t.Errorf("--all-contexts: exit %d\n%s", code, out)
	}
	// Several clusters go with --all only.
	if _, errOut, code := diffBinary(t, "release", "web", "-n", ns, "--kubeconfig", kubeconfig, "--kube-context", "first", "--kube-context", "second"); code != 1 || !strings.Contains(errOut, "go with --all or -A") {
		t.Errorf("one release, two contexts: exit %d, %s", code, errOut)
	}
}

// fleetKubeconfig writes a kubeconfig with one context per entry of servers (name → server
// URL), each with the credentials of the admin kubeconfig at base, TLS not verified (a proxy
// has its own certificate; the second environment is reached through one, which brings its own
// credentials).
func fleetKubeconfig(t *testing.T, servers map[string]string, base string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(base)
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, u := range cfg.AuthInfos {
		token = u.Token
	}
	if token == "" {
		t.Fatalf("%s: no token", base)
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for name, server := range servers {
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\n", name, server)
	}
	fmt.Fprintf(&b, "users:\n- name: admin\n  user:\n    token: %s\ncontexts:\n", token)
	for name := range servers {
		fmt.Fprintf(&b, "- name: %s\n  context: {cluster: %s, user: admin}\n", name, name)
	}
	b.WriteString("current-context: first\n")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
