package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// The tests of self-management under failure: until helm-controller has adopted the release,
// Helm's own recovery (a failed --atomic install, helm uninstall, helm rollback) works and
// leaves nothing behind; every stuck state "self status" names is produced here and resolved by
// the command it prints. The guard's writer is a ServiceAccount, not the CLI's user, so a guard
// that refused the CLI would show.

// selfFailArgs is a helm install of selfapp as release app in ns with --self (the guard on, the
// detached resumer rendered), the Deployment that never becomes ready switched on, and helm's
// extra flags.
func selfFailArgs(t *testing.T, helmName, ns string, helmFlags ...string) (*helmCLI, []string) {
	t.Helper()
	h, postRenderer := postRendererHelm(t, helmName)
	repo := "oci://" + cluster.Registry + "/selffail-" + ns
	tgz := packageSelfApp(t, h, "1.0.0", "1.0")
	h.run(t, false, nil, "push", tgz, repo, "--plain-http")
	args := append([]string{"install", "app", tgz, "-n", ns, "--set", "deployment=true"}, helmFlags...)
	args = append(args, postRenderer...)
	return h, append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--self-service-account=app-deployer", "--self-bracket=job", "--self-hook-image=registry.example.internal/helm-drift:test",
		"--self-resumer-timeout=2m", "--kubeconfig="+cluster.Kubeconfig)...)
}

// selfLeftovers lists what of release app is in ns or cluster-wide: its storage, its objects,
// the pair, the values Secret, the guard, the resumer and its RBAC.
func selfLeftovers(t *testing.T, ns string) []string {
	t.Helper()
	ctx := context.Background()
	kube := cluster.Kube
	var left []string
	add := func(what string, err error) {
		switch {
		case err == nil:
			left = append(left, what)
		case !apierrors.IsNotFound(err):
			t.Fatalf("%s: %v", what, err)
		}
	}
	if n := storageRevisions(t, ns, "app"); n > 0 {
		left = append(left, "release storage")
	}
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		left = append(left, "Secret "+s.Name)
	}
	_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{})
	add("ConfigMap app-config", err)
	_, err = kube.AppsV1().Deployments(ns).Get(ctx, "app-web", metav1.GetOptions{})
	add("Deployment app-web", err)
	_, err = cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
	add("HelmRelease app", err)
	_, err = cluster.Dynamic.Resource(ociRepositories).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
	add("OCIRepository app", err)
	guard := "helm-drift-self." + ns + ".app"
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{})
	add("ValidatingAdmissionPolicy "+guard, err)
	for _, b := range []string{guard, guard + ".warn"} {
		_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, b, metav1.GetOptions{})
		add("ValidatingAdmissionPolicyBinding "+b, err)
	}
	_, err = kube.BatchV1().Jobs(ns).Get(ctx, "app-self-resumer", metav1.GetOptions{})
	add("Job app-self-resumer", err)
	_, err = kube.CoreV1().ServiceAccounts(ns).Get(ctx, "app-self-resumer", metav1.GetOptions{})
	add("ServiceAccount app-self-resumer", err)
	_, err = kube.RbacV1().ClusterRoles().Get(ctx, guard+".resumer", metav1.GetOptions{})
	add("ClusterRole "+guard+".resumer", err)
	_, err = kube.RbacV1().ClusterRoleBindings().Get(ctx, guard+".resumer", metav1.GetOptions{})
	add("ClusterRoleBinding "+guard+".resumer", err)
	return left
}

// waitNothingLeft waits until nothing of release app is left in ns (a deleted HelmRelease or
// OCIRepository goes once its controller has removed its finalizer).
func waitNothingLeft(t *testing.T, ns, after string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "nothing of release app left after "+after, func() (bool, string) {
		left := selfLeftovers(t, ns)
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// wantStatus checks that "helm drift self status app" in ns says each of wants, in the state
// named what.
func wantStatus(t *testing.T, ns, what string, wants ...string) {
	t.Helper()
	status := selfStatus(t, ns)
	for _, want := range wants {
		if !strings.Contains(status, want) {
			t.Errorf("self status %s lacks %q:\n%s", what, want, status)
		}
	}
}

// killWhileWaiting starts helm with args and kills it once it has written the release's
// Deployment and waits for it to become ready (it never does here): the release is left
// pending.
func killWhileWaiting(t *testing.T, h *helmCLI, ns string, args ...string) {
	t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env, cmd.Dir = h.env, repoRoot
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testenv.Eventually(t, time.Minute, "helm "+args[0]+" writes the objects and waits", func() (bool, string) {
		_, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "app-web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "helm-drift-self."+ns+".app", metav1.GetOptions{})
		return err == nil, "the guard: " + errString(err)
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// selfStatus runs "helm drift self status app" and returns its output.
func selfStatus(t *testing.T, ns string) string {
	t.Helper()
	out, errOut, err := selfBinary(t, "status", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil {
		t.Fatalf("self status: %v\n%s%s", err, out, errOut)
	}
	return out
}

// TestSelfAtomicInstallLeavesNothing: helm install --atomic (Helm 4: --rollback-on-failure)
// --wait with --self, of a chart whose Deployment never becomes ready, fails, and the guard,
// not armed before the hand-over, lets Helm remove the failed install completely: no release
// storage, no object of the chart, no pair, no values Secret, no guard, no resumer. A second
// install of the same name then succeeds.
func TestSelfAtomicInstallLeavesNothing(t *testing.T) {
	for _, tc := range []struct{ helm, flag string }{{"helm3", "--atomic"}, {"helm4", "--rollback-on-failure"}} {
		t.Run(tc.helm, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Namespace(t)
			h, args := selfFailArgs(t, tc.helm, ns, tc.flag, "--wait", "--timeout", "15s")
			_, errOut := h.run(t, true, nil, args...)
			if strings.Contains(errOut, "an error occurred while uninstalling") || strings.Contains(errOut, "is managed by Flux") {
				t.Errorf("the failed install was not removed cleanly:\n%s", errOut)
			}
			if left := selfLeftovers(t, ns); len(left) > 0 {
				// The HelmRelease's finalizer may take helm-controller a moment.
				waitNothingLeft(t, ns, "the failed "+tc.flag+" install")
			}
			// Without the Deployment, and without waiting (Helm 4's --wait waits for the resumer
			// Job too, which nothing runs here).
			var second []string
			for i := 0; i < len(args); i++ {
				switch a := args[i]; a {
				case "deployment=true":
					second = append(second, "deployment=false")
				case tc.flag, "--wait":
				case "--timeout":
					i++
				default:
					second = append(second, a)
				}
			}
			h.run(t, false, nil, second...)
			if st, _ := h.run(t, false, nil, "status", "app", "-n", ns); !strings.Contains(st, "STATUS: deployed") {
				t.Errorf("the second install is not deployed:\n%s", st)
			}
			if status := selfStatus(t, ns); !strings.Contains(status, "guard:     not armed yet") || !strings.Contains(status, "the bracket is open") {
				t.Errorf("self status after the second install:\n%s", status)
			}
		})
	}
}

// TestSelfFailedInstall: a failed install without --atomic, with the bracket open. The resumer
// Job, run for real, never resumes it; "self status" names the state and "helm uninstall";
// helm uninstall then removes everything, the pair and the guard included.
func TestSelfFailedInstall(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Namespace(t)
			runner := startJobRunner(t, ns)
			h, args := selfFailArgs(t, helmName, ns, "--wait", "--timeout", "15s")
			h.run(t, true, nil, args...)
			code, out := runner.wait(t, "app-self-resumer", 2*time.Minute)
			if code == 0 || !strings.Contains(out, "failed") || !strings.Contains(out, "nothing resumed") {
				t.Errorf("the resumer of a failed install: exit %d, want a failure that resumed nothing\n%s", code, out)
			}
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); !s {
				t.Errorf("the HelmRelease of a failed install was resumed")
			}
			wantStatus(t, ns, "of a failed install", "revision 1, failed", "stuck:     the install failed with the bracket open", `"helm uninstall app -n `+ns+`"`)
			h.run(t, false, nil, "uninstall", "app", "-n", ns)
			waitNothingLeft(t, ns, "helm uninstall of the failed install")
		})
	}
}

// TestSelfInterruptedInstall: a helm install killed while it waits leaves revision 1
// pending-install with the bracket open, which nothing will finish; "self status" names it and
// "helm uninstall", which removes everything.
func TestSelfInterruptedInstall(t *testing.T) {
	t.Parallel()
	ns := cluster.Namespace(t)
	h, args := selfFailArgs(t, "helm3", ns, "--wait", "--timeout", "5m")
	killWhileWaiting(t, h, ns, args...)
	wantStatus(t, ns, "of an interrupted install", "revision 1, pending-install", "stuck:     revision 1 is pending-install with the bracket open", `"helm uninstall app -n `+ns+`"`)
	h.run(t, false, nil, "uninstall", "app", "-n", ns)
	waitNothingLeft(t, ns, "helm uninstall of the interrupted install")
}

// hrs is the HelmReleases of ns.
func hrs(ns string) dynamic.ResourceInterface {
	return cluster.Dynamic.Resource(helmReleases).Namespace(ns)
}

func errString(err error) string {
	if err == nil {
		return "present"
	}
	return err.Error()
}

// selfInstallAsDeployer installs selfapp 1.0.0 as release app in ns with --self (Helm 3), the
// guard's writer the ServiceAccount app-deployer (created here with the RBAC the chart needs),
// from a repository of the test registry named after tag; it returns the chart's path.
func selfInstallAsDeployer(t *testing.T, h *helmCLI, ns, tag string, helmFlags ...string) string {
	t.Helper()
	deployerRBAC(t, ns, "app-deployer")
	repo := "oci://" + cluster.Registry + "/" + tag + "-" + ns
	v100 := packageSelfApp(t, h, "1.0.0", "1.0")
	h.run(t, false, nil, "push", v100, repo, "--plain-http")
	args := append([]string{"install", "app", v100, "-n", ns, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}, helmFlags...)
	args = append(args, postRendererArgs("--self", "--install", "--release=app", "--namespace="+ns, "--self-repository="+repo, "--self-insecure",
		"--self-service-account=app-deployer", "--kubeconfig="+cluster.Kubeconfig)...)
	h.run(t, false, nil, args...)
	return v100
}

// TestSelfStuckAfterHandOver: the two stuck states after the hand-over, each named by "self
// status" with the command that resolves it. A HelmRelease suspended by hand while the guard is
// armed (nobody may write the release): "self resume" hands it to helm-controller again. An
// armed guard whose HelmRelease was deleted: "self handback" lifts it, and the CLI upgrades
// the release again.
func TestSelfStuckAfterHandOver(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	v100 := selfInstallAsDeployer(t, h, ns, "selfstuck", "--set", "greeting=custom")
	out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "CLI guard armed") {
		t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
	}
	waitRevision(t, ns, 2, "helm-controller adopts the release")
	// The hand-over marked the pair and the guard keep, so helm-controller's first upgrade,
	// which renders the chart without them, left them in place.
	guard := "helm-drift-self." + ns + ".app"
	for _, o := range []struct {
		get  func() (metav1.Object, error)
		what string
	}{
		{func() (metav1.Object, error) { return hrs(ns).Get(ctx, "app", metav1.GetOptions{}) }, "HelmRelease app"},
		{func() (metav1.Object, error) {
			return cluster.Dynamic.Resource(ociRepositories).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
		}, "OCIRepository app"},
		{func() (metav1.Object, error) {
			return cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, guard, metav1.GetOptions{})
		}, "ValidatingAdmissionPolicy " + guard},
		{func() (metav1.Object, error) {
			return cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, guard, metav1.GetOptions{})
		}, "ValidatingAdmissionPolicyBinding " + guard},
	} {
		obj, err := o.get()
		if err != nil {
			t.Errorf("%s after the adoption: %v", o.what, err)
			continue
		}
		if obj.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s after the adoption is not marked helm.sh/resource-policy: keep: %v", o.what, obj.GetAnnotations())
		}
	}

	hr := hrs(ns)
	if _, err := hr.Patch(ctx, "app", types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ns, "with the HelmRelease suspended by hand", "writer:    nobody: HelmRelease "+ns+"/app is suspended and the CLI guard is armed", "stuck:", `"helm drift self resume app -n `+ns+`"`)
	if out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig); err != nil || !strings.Contains(out, "resumed") {
		t.Fatalf("self resume of the suspended HelmRelease: %v\n%s%s", err, out, errOut)
	}
	if status := selfStatus(t, ns); strings.Contains(status, "stuck:") || !strings.Contains(status, "writer:    helm-controller") {
		t.Errorf("self status after the resume:\n%s", status)
	}

	// Deleted by hand (suspended first, so helm-controller lets it go without uninstalling),
	// through the namespace's escape hatch: the guard refuses the delete of a release object
	// otherwise.
	if _, err := hr.Patch(ctx, "app", types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := hr.Delete(ctx, "app", metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "is managed by Flux") {
		t.Errorf("kubectl delete of the HelmRelease with the guard armed: %v, want the guard's refusal", err)
	}
	allow := func(v string) {
		patch := `{"metadata":{"annotations":{"helm-drift.io/allow-cli-writes":` + v + `}}}`
		if _, err := cluster.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	allow(`"true"`)
	testenv.Eventually(t, 30*time.Second, "the HelmRelease is deleted through the escape hatch", func() (bool, string) {
		err := hr.Delete(ctx, "app", metav1.DeleteOptions{})
		return err == nil || apierrors.IsNotFound(err), errString(err)
	})
	allow("null")
	testenv.Eventually(t, 30*time.Second, "the guard refuses again once the escape hatch is closed", func() (bool, string) {
		err := cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "is managed by Flux"), errString(err)
	})
	testenv.Eventually(t, time.Minute, "the HelmRelease is gone", func() (bool, string) {
		_, err := hr.Get(ctx, "app", metav1.GetOptions{})
		return apierrors.IsNotFound(err), errString(err)
	})
	wantStatus(t, ns, "with the guard but no HelmRelease", "the CLI guard is armed but there is no HelmRelease", "stuck:", `"helm drift self handback app -n `+ns+`"`)
	if _, errOut := h.run(t, true, nil, "upgrade", "app", v100, "-n", ns, "--set", "greeting=stuck"); !strings.Contains(errOut, "is managed by Flux") {
		t.Errorf("the CLI upgrade with the guard armed and no HelmRelease: not refused by the guard:\n%s", errOut)
	}
	out, errOut, err = selfBinary(t, "handback", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "the CLI guard removed") || !strings.Contains(out, "the Helm CLI owns it again") {
		t.Fatalf("self handback without a HelmRelease: %v\n%s%s", err, out, errOut)
	}
	h.run(t, false, nil, "upgrade", "app", v100, "-n", ns, "--set", "greeting=back")
	checkConfig(t, ns, "back", "1.0")
	if status := selfStatus(t, ns); strings.Contains(status, "stuck:") {
		t.Errorf("self status after the handback:\n%s", status)
	}
}

// TestSelfFailedUpgrade: a release the CLI installed without the post-renderer, moved into
// self-management by a "helm upgrade --self" that fails. With --atomic, Helm rolls it back and
// the rollback removes the pair and the guard (nothing is kept before the hand-over). Without
// it, the failed revision has the bracket open: "self status" names "helm rollback", which
// removes them the same way; an upgrade killed mid-wait (pending-upgrade) likewise.
func TestSelfFailedUpgrade(t *testing.T) {
	for _, mode := range []string{"atomic", "failed", "interrupted"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Namespace(t)
			h, args := selfFailArgs(t, "helm3", ns, "--wait", "--timeout", "15s")
			tgz := args[2]
			h.run(t, false, nil, "install", "app", tgz, "-n", ns)
			up := append([]string{"upgrade"}, args[1:]...)
			var filtered []string
			for _, a := range up {
				if a != "--post-renderer-args=--install" {
					filtered = append(filtered, a)
				}
			}
			up = filtered
			switch mode {
			case "atomic":
				_, errOut := h.run(t, true, nil, append(up, "--atomic")...)
				if strings.Contains(errOut, "is managed by Flux") || !strings.Contains(errOut, "rolled back") {
					t.Errorf("the atomic upgrade was not rolled back cleanly:\n%s", errOut)
				}
			case "failed":
				h.run(t, true, nil, up...)
				wantStatus(t, ns, "of a failed upgrade", "revision 2, failed", "stuck:     revision 2 failed with the bracket open", `"helm rollback app -n `+ns+`"`)
				h.run(t, false, nil, "rollback", "app", "-n", ns)
			case "interrupted":
				for i, a := range up {
					if a == "15s" {
						up[i] = "5m"
					}
				}
				killWhileWaiting(t, h, ns, up...)
				wantStatus(t, ns, "of an interrupted upgrade", "revision 2, pending-upgrade", "stuck:     revision 2 is pending-upgrade with the bracket open", `"helm rollback app -n `+ns+`"`)
				h.run(t, false, nil, "rollback", "app", "-n", ns)
			}
			// Back at revision 1's objects: the pair, the guard and the resumer are gone.
			testenv.Eventually(t, time.Minute, "only the release's own objects are left", func() (bool, string) {
				left := strings.Join(selfLeftovers(t, ns), ", ")
				return left == "release storage, Secret sh.helm.release.v1.app.v1, Secret sh.helm.release.v1.app.v2, Secret sh.helm.release.v1.app.v3, ConfigMap app-config", left
			})
			if st, _ := h.run(t, false, nil, "status", "app", "-n", ns); !strings.Contains(st, "STATUS: deployed") {
				t.Errorf("the release is not deployed after the rollback:\n%s", st)
			}
			if status := selfStatus(t, ns); strings.Contains(status, "stuck:") || !strings.Contains(status, "writer:    the Helm CLI (no HelmRelease") {
				t.Errorf("self status after the rollback:\n%s", status)
			}
		})
	}
}

// TestSelfResumedByHand: a HelmRelease resumed by hand (not by "self resume") leaves
// helm-controller writing the release with the guard not armed, so a helm uninstall would be
// undone: "self status" names it and "self resume", which arms the guard.
func TestSelfResumedByHand(t *testing.T) {
	t.Parallel()
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	selfInstallAsDeployer(t, h, ns, "selfbyhand")
	if _, err := hrs(ns).Patch(ctx, "app", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ns, "with the HelmRelease resumed by hand", "writer:    helm-controller", "stuck:     helm-controller writes the release but the CLI guard is not armed", `"helm drift self resume app -n `+ns+`" arms it`)
	out, errOut, err := selfBinary(t, "resume", "app", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if err != nil || !strings.Contains(out, "CLI guard armed") {
		t.Fatalf("self resume: %v\n%s%s", err, out, errOut)
	}
	if status := selfStatus(t, ns); strings.Contains(status, "stuck:") || !strings.Contains(status, "guard:     armed") {
		t.Errorf("self status after the resume:\n%s", status)
	}
	waitRevision(t, ns, 2, "helm-controller adopts the release")
	// The API server enforces a changed policy binding a moment after it is written (its
	// policies are read from a cache): a dry run of a delete of the release's objects is
	// refused once it does (helm-controller may have adopted the release before the resume).
	testenv.Eventually(t, time.Minute, "the armed guard to refuse deleting the release's objects", func() (bool, string) {
		err := cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "is managed by Flux"), fmt.Sprint(err)
	})
	if _, errOut := h.run(t, true, nil, "uninstall", "app", "-n", ns); !strings.Contains(errOut, "is managed by Flux") {
		t.Errorf("helm uninstall after the guard was armed: not refused:\n%s", errOut)
	}
}
