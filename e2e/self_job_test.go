package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// selfJobInstall installs selfapp with --self --self-bracket job (the detached resumer), with
// extra helm install flags: under Helm 3 through the binary, under Helm 4 through the
// drift-render post-renderer plugin.
func selfJobInstall(t *testing.T, h *helmCLI, ns, timeout string, wantErr bool, helmFlags ...string) string {
	t.Helper()
	repo := "oci://" + cluster.Registry + "/selfjob-" + ns
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	h.run(t, false, nil, "push", tgz, repo, "--plain-http")
	postRenderer := []string{"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}
	if h.name == "helm4" {
		h.installPlugins(t)
		postRenderer = []string{"--post-renderer", "drift-render"}
	}
	args := append(append([]string{"install", "app", tgz, "-n", ns, "--set", "greeting=custom"}, postRenderer...), helmFlags...)
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--self-bracket=job", "--self-hook-image=registry.example.internal/helm-drift:test", "--self-resumer-timeout="+timeout,
		"--kubeconfig="+cluster.Kubeconfig, selfSharedIdentity)...)
	_, errOut := h.run(t, wantErr, nil, args...)
	return errOut
}

// TestSelfJobBracket: under Helm 3 and Helm 4 the bracket ends by itself. The detached resumer Job, run
// for real under its own ServiceAccount, waits until the revision is deployed, then writes the
// values Secret and resumes the HelmRelease: helm-controller adopts the release in exactly one
// more revision, and no revision is ever marked failed.
func TestSelfJobBracket(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) { selfJobBracket(t, helmName) })
	}
}

func selfJobBracket(t *testing.T, helmName string) {
	h := clusterHelm(t, helmName)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	runner := startJobRunner(t, ns)
	selfJobInstall(t, h, ns, "2m", false)
	code, out := runner.wait(t, "app-self-resumer", 3*time.Minute)
	if code != 0 || !strings.Contains(out, "revision 1 is deployed") || !strings.Contains(out, "resumed") {
		t.Fatalf("the resumer Job: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "status not written") {
		t.Errorf("the Job runner could not write the Job's status:\n%s", out)
	}
	waitRevision(t, ns, 2, "helm-controller adopts the release after the resumer")
	checkConfig(t, ns, "custom", "1.0")

	// One adoption revision, and no revision marked failed: helm-controller never found the
	// release pending (it marks a pending release failed before taking it over).
	secrets, err := cluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=app"})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]string{}
	for _, s := range secrets.Items {
		statuses[s.Labels["version"]] = s.Labels["status"]
	}
	if len(statuses) != 2 || statuses["1"] != "superseded" || statuses["2"] != "deployed" {
		t.Errorf("storage revisions %v, want 1 superseded and 2 deployed (one adoption, nothing failed)", statuses)
	}
	hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); s {
		t.Errorf("the HelmRelease is still suspended")
	}
}

// TestSelfJobBracketGivesUp: a revision that stays pending past the resumer's timeout is never
// resumed. helm install --wait-for-jobs waits for the resumer Job while the revision is pending,
// so the two wait on each other: the resumer gives up after its timeout (exit 1, nothing
// resumed), and the install fails on its own timeout (the README says not to combine them).
func TestSelfJobBracketGivesUp(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	runner := startJobRunner(t, ns)
	selfJobInstall(t, h, ns, "5s", true, "--wait", "--wait-for-jobs", "--timeout", "25s")
	code, out := runner.wait(t, "app-self-resumer", time.Minute)
	if code == 0 || !strings.Contains(out, "nothing resumed") {
		t.Errorf("the resumer Job of a pending revision: exit %d, want a failure that resumed nothing\n%s", code, out)
	}
	hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); !s {
		t.Errorf("the HelmRelease was resumed although the revision never got deployed")
	}
}
