package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// TestWaitDeployed: resume goes on only for a deployed release; pending past the timeout and
// failed (without --force) stop it with a message that says nothing was resumed.
func TestWaitDeployed(t *testing.T) {
	tests := map[release.Status]struct {
		force bool
		want  string
	}{
		release.StatusDeployed:       {false, ""},
		release.StatusPendingInstall: {false, "still pending-install after 1s: nothing resumed"},
		release.StatusPendingUpgrade: {false, "still pending-upgrade after 1s: nothing resumed"},
		release.StatusFailed:         {false, "failed (boom): nothing resumed; the CLI guard is not armed before the hand-over, so fix it with helm upgrade (or helm rollback), or remove it with helm uninstall app -n apps; or resume anyway with --force"},
		release.StatusUninstalled:    {false, "is uninstalled, not deployed: nothing resumed"},
	}
	for st, tc := range tests {
		t.Run(string(st), func(t *testing.T) {
			cfg := &action.Configuration{Releases: storage.Init(driver.NewMemory()), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}, Log: func(string, ...any) {}}
			rel := &release.Release{Name: "app", Namespace: "apps", Version: 1, Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}},
				Info: &release.Info{Status: st, Description: "boom"}}
			if err := cfg.Releases.Create(rel); err != nil {
				t.Fatal(err)
			}
			o := selfOptions{namespace: "apps", timeout: time.Second, force: tc.force}
			_, err := o.waitDeployed(context.Background(), &selfClients{helm: cfg}, "app")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	cfg := &action.Configuration{Releases: storage.Init(driver.NewMemory()), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}, Log: func(string, ...any) {}}
	cfg.Releases.Create(&release.Release{Name: "app", Version: 1, Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "app"}}, Info: &release.Info{Status: release.StatusFailed}})
	o := selfOptions{namespace: "apps", timeout: time.Second, force: true}
	if _, err := o.waitDeployed(context.Background(), &selfClients{helm: cfg}, "app"); err != nil {
		t.Errorf("--force on a failed release: %v", err)
	}
}

// TestDefaultHookImage: a released build (a version and an image repository stamped) renders
// the resumer Job from its own image when --self-hook-image is not given; a pre-release or a
// build without a repository has no default and says so.
func TestDefaultHookImage(t *testing.T) {
	input, err := os.ReadFile("../../testdata/render/self-job/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"render", "--self", "--install", "--release=platform", "--namespace=flux-system",
		"--self-repository=oci://registry.example.internal/charts", "--kubeconfig=/nonexistent/kubeconfig", "--self-bracket=job"}
	defer func(v, r string) { version, imageRepository = v, r }(version, imageRepository)
	for _, tc := range []struct{ version, repo, want string }{
		{"v0.3.0", "registry.example.internal/tools/helm-drift", "image: registry.example.internal/tools/helm-drift:v0.3.0"},
		{"v0.3.0-dev", "registry.example.internal/tools/helm-drift", ""},
		{"v0.3.0", "", ""},
	} {
		version, imageRepository = tc.version, tc.repo
		var out, errOut bytes.Buffer
		code := Run(args, bytes.NewReader(input), &out, &errOut)
		switch {
		case tc.want != "" && (code != 0 || !strings.Contains(out.String(), tc.want)):
			t.Errorf("%s %q: exit %d, want the Job's %q\n%s", tc.version, tc.repo, code, tc.want, errOut.String())
		case tc.want == "" && (code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "needs --self-hook-image")):
			t.Errorf("%s %q: exit %d, want 1 asking for --self-hook-image\n%s", tc.version, tc.repo, code, errOut.String())
		}
	}
}

// TestCompletionYAML: the committed completion.yaml is what the flag sets generate.
func TestCompletionYAML(t *testing.T) {
	want, err := completionYAML()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../completion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("completion.yaml is stale: run bin/helm-drift __completion-yaml > completion.yaml")
	}
}

// TestCompleteArgs: plugin.complete's answers that need no cluster.
func TestCompleteArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--norm"}, ":4\n"},
		{[]string{"diff", "upgrade", "web", ""}, ":0\n"},
		{[]string{"version", ""}, ":4\n"},
		{nil, ":4\n"},
	} {
		var out bytes.Buffer
		if code := runComplete(tc.args, nil, &out, io.Discard); code != 0 || out.String() != tc.want {
			t.Errorf("%v: %q (exit %d), want %q", tc.args, out.String(), code, tc.want)
		}
	}
}
