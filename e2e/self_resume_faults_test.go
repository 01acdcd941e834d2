package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cutProxy forwards to the test API server until the n-th write (POST, PUT, PATCH, DELETE):
// that one is cut off before it reaches the server or, with delivered, after the server applied
// it and before the answer comes back; every request after it fails too, as if the process had
// been killed at that step.
func cutProxy(t *testing.T, n int, delivered bool) string {
	t.Helper()
	var mu sync.Mutex
	writes, cut := 0, false
	return proxyToCluster(t, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		mu.Lock()
		if r.Method != http.MethodGet {
			writes++
		}
		this := !cut && writes == n && r.Method != http.MethodGet
		wasCut := cut
		cut = cut || this
		mu.Unlock()
		switch {
		case wasCut:
			dropConnection(w)
		case this && delivered:
			forward.ServeHTTP(httptest.NewRecorder(), r)
			dropConnection(w)
		case this:
			dropConnection(w)
		default:
			forward.ServeHTTP(w, r)
		}
	})
}

// TestSelfResumeFaults: `self resume` cut off at each of its six writes (the values Secret, the
// keep marks, the guard armed, the HelmRelease resumed), before and after the server applied it, fails saying what it could not
// do; run again, it converges: the Secret holds the user's values once, the HelmRelease is
// resumed, and helm-controller adopts the release exactly once (revision 2).
func TestSelfResumeFaults(t *testing.T) {
	h := clusterHelm(t, "helm3")
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	// The hand-over's writes, in order: each one cut, before and after it reached the server.
	failed := func(ns string) map[int]string {
		guard := "helm-drift-self." + ns + ".app"
		return map[int]string{
			1: "values Secret " + ns + "/app-values",
			2: "mark OCIRepository " + ns + "/app keep",
			3: "mark the CLI guard's ValidatingAdmissionPolicy " + guard + " keep",
			4: "arm the CLI guard's ValidatingAdmissionPolicyBinding " + guard + ":",
			5: "arm the CLI guard's ValidatingAdmissionPolicyBinding " + guard + ".warn",
			6: "resume HelmRelease " + ns + "/app",
		}
	}
	var cases []struct {
		write     int
		delivered bool
	}
	for w := 1; w <= 6; w++ {
		cases = append(cases, struct {
			write     int
			delivered bool
		}{w, false}, struct {
			write     int
			delivered bool
		}{w, true})
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("write%d-delivered=%v", tc.write, tc.delivered), func(t *testing.T) {
			t.Parallel()
			ns := cluster.Namespace(t)
			ctx := context.Background()
			repo := "oci://" + cluster.Registry + "/self-" + ns
			h.run(t, false, nil, "push", tgz, repo, "--plain-http")
			args := []string{"install", "app", tgz, "-n", ns, "--set", "greeting=custom",
				"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
			args = append(args, postRendererArgs("--self", "--release=app", "--namespace="+ns, "--self-repository="+repo,
				"--self-insecure", "--kubeconfig="+cluster.Kubeconfig, "--install", selfSharedIdentity)...)
			h.run(t, false, nil, args...)

			out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cutProxy(t, tc.write, tc.delivered), "--request-timeout=5s")
			if err == nil {
				t.Fatalf("resume cut at write %d succeeded:\n%s", tc.write, out)
			}
			want := failed(ns)[tc.write]
			if !strings.Contains(errOut, want) {
				t.Errorf("resume cut at write %d: the message does not say what failed (want %q):\n%s", tc.write, want, errOut)
			}

			out, errOut, err = selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
			if err != nil {
				t.Fatalf("resume again: %v\n%s%s", err, out, errOut)
			}
			secret, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "app-values", metav1.GetOptions{})
			if err != nil || string(secret.Data["values.yaml"]) != "greeting: custom\n" {
				t.Fatalf("values Secret after the re-run: %v %q", err, secret.Data["values.yaml"])
			}
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); s {
				t.Fatalf("the HelmRelease is still suspended after the re-run")
			}
			waitRevision(t, ns, 2, "helm-controller adopts the release once")
			checkConfig(t, ns, "custom", "1.0")
			revisions, err := cluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=app"})
			if err != nil || len(revisions.Items) != 2 {
				t.Errorf("Helm revisions after the re-run: %v %d, want 2", err, len(revisions.Items))
			}
		})
	}
}
