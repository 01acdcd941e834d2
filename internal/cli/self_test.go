package cli

import (
	"context"
	"io"
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
		release.StatusFailed:         {false, "failed (boom): nothing resumed; fix it, or resume anyway with --force"},
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
