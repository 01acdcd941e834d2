package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// jobRunner stands in for the kubelet the test environment lacks, for Jobs only: it watches
// one namespace's Jobs and runs each one's container command (helm-drift) once, as a local
// process of the binary the plugin install built, with the container's env, under a token of
// the Job's ServiceAccount obtained with the TokenRequest API, against the real API server: so
// a resumer Job really runs, under its real RBAC. It records each run's exit code and output,
// and writes the Job's status as the Job controller would (Complete or Failed), so that Helm,
// which waits for hook Jobs, sees them end.
type jobRunner struct {
	ns   string
	dir  string
	mu   sync.Mutex
	seen map[string]bool
	runs map[string]jobRun
	wg   sync.WaitGroup
}

type jobRun struct {
	code int
	out  string
}

func startJobRunner(t *testing.T, ns string) *jobRunner {
	t.Helper()
	r := &jobRunner{ns: ns, dir: t.TempDir(), seen: map[string]bool{}, runs: map[string]jobRun{}}
	ctx, cancel := context.WithCancel(context.Background())
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			jobs, err := cluster.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, j := range jobs.Items {
					r.mu.Lock()
					started := r.seen[j.Name]
					r.seen[j.Name] = true
					r.mu.Unlock()
					if !started {
						r.wg.Add(1)
						go func() { defer r.wg.Done(); r.run(ctx, j.Name, j.Spec.Template.Spec) }()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	return r
}

func (r *jobRunner) run(ctx context.Context, name string, spec corev1.PodSpec) {
	record := func(code int, out string) {
		r.mu.Lock()
		r.runs[name] = jobRun{code, out}
		r.mu.Unlock()
	}
	if len(spec.Containers) != 1 {
		record(-1, "jobRunner: want exactly one container")
		return
	}
	c := spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 || argv[0] != "helm-drift" {
		record(-1, fmt.Sprintf("jobRunner: runs helm-drift only, not %v", argv))
		return
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	expiry := int64(3600)
	tok, err := cluster.Kube.CoreV1().ServiceAccounts(r.ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		record(-1, fmt.Sprintf("jobRunner: token for ServiceAccount %s: %v", sa, err))
		return
	}
	kubeconfig := filepath.Join(r.dir, name+".kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: %s}\ncurrent-context: c\n", cluster.Config.Host, tok.Status.Token, r.ns)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		record(-1, err.Error())
		return
	}
	cmd := exec.CommandContext(ctx, filepath.Join(pluginCopy, "bin/helm-drift"), argv[1:]...)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + r.dir, "PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	record(code, out.String())
	r.setStatus(ctx, name, code == 0)
}

// setStatus writes the end of the Job's run into its status, with the conditions the API
// server's validation asks for (SuccessCriteriaMet before Complete, FailureTarget before
// Failed).
func (r *jobRunner) setStatus(ctx context.Context, name string, succeeded bool) {
	jobs := cluster.Kube.BatchV1().Jobs(r.ns)
	j, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return // a hook Job Helm already deleted
	}
	now := metav1.Now()
	j.Status.StartTime = &now
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now}
	}
	if succeeded {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
	}
	if _, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		r.mu.Lock()
		run := r.runs[name]
		run.out += "\njobRunner: status not written: " + err.Error()
		r.runs[name] = run
		r.mu.Unlock()
	}
}

// wait returns the exit code and output of Job name's run, once it has ended.
func (r *jobRunner) wait(t *testing.T, name string, timeout time.Duration) (int, string) {
	t.Helper()
	var run jobRun
	testenv.Eventually(t, timeout, "Job "+name+" runs to its end", func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		var ok bool
		run, ok = r.runs[name]
		return ok, fmt.Sprintf("seen %v", r.seen[name])
	})
	return run.code, run.out
}
