package action

import (
	"context"
	"errors"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			s := &Self{Namespace: "apps", Timeout: time.Second, Force: tc.force}
			_, err := s.waitDeployed(context.Background(), &selfClients{helm: cfg}, "app")
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
	s := &Self{Namespace: "apps", Timeout: time.Second, Force: true}
	if _, err := s.waitDeployed(context.Background(), &selfClients{helm: cfg}, "app"); err != nil {
		t.Errorf("--force on a failed release: %v", err)
	}
}

// TestJudge: who writes the release, and every stuck state with the one command that resolves
// it, from the release, its HelmRelease and the guard's state.
func TestJudge(t *testing.T) {
	rel := func(version int, st release.Status) *release.Release {
		return &release.Release{Name: "app", Version: version, Info: &release.Info{Status: st, Description: "boom"}}
	}
	hr := func(suspended bool) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": suspended},
			"status": map[string]any{"history": []any{map[string]any{"version": int64(2)}}}}}
	}
	gone := driver.ErrReleaseNotFound
	tests := map[string]struct {
		rel           *release.Release
		relErr        error
		hr            *unstructured.Unstructured
		guard         string
		writer, stuck string
	}{
		"no HelmRelease":                {rel: rel(1, release.StatusDeployed), guard: GuardAbsent, writer: "the Helm CLI (no HelmRelease apps/app)"},
		"guard without HelmRelease":     {rel: rel(2, release.StatusDeployed), guard: GuardArmed, writer: "nobody", stuck: `"helm drift self handback app -n apps"`},
		"bracket open, deployed":        {rel: rel(1, release.StatusDeployed), hr: hr(true), guard: GuardDisarmed, writer: "the bracket is open"},
		"bracket open, pending install": {rel: rel(1, release.StatusPendingInstall), hr: hr(true), guard: GuardDisarmed, writer: "the bracket is open", stuck: `revision 1 is pending-install with the bracket open`},
		"bracket open, pending upgrade": {rel: rel(2, release.StatusPendingUpgrade), hr: hr(true), guard: GuardDisarmed, writer: "the bracket is open", stuck: `"helm rollback app -n apps"`},
		"bracket open, failed install":  {rel: rel(1, release.StatusFailed), hr: hr(true), guard: GuardDisarmed, writer: "the bracket is open", stuck: `the install failed with the bracket open (boom), and nothing resumes a failed release: "helm uninstall app -n apps"`},
		"bracket open, failed upgrade":  {rel: rel(3, release.StatusFailed), hr: hr(true), guard: GuardDisarmed, writer: "the bracket is open", stuck: `revision 3 failed with the bracket open (boom), and nothing resumes a failed release: "helm rollback app -n apps"`},
		"suspended, guard armed":        {rel: rel(2, release.StatusDeployed), hr: hr(true), guard: GuardArmed, writer: "nobody: HelmRelease apps/app is suspended and the CLI guard is armed", stuck: `"helm drift self resume app -n apps"`},
		"adopted":                       {rel: rel(2, release.StatusDeployed), hr: hr(false), guard: GuardArmed, writer: "helm-controller (HelmRelease active; its last revision 2)"},
		"adopted, guard not armed":      {rel: rel(2, release.StatusDeployed), hr: hr(false), guard: GuardDisarmed, writer: "helm-controller", stuck: `"helm drift self resume app -n apps" arms it`},
		"adopted, without a guard":      {rel: rel(2, release.StatusDeployed), hr: hr(false), guard: GuardAbsent, writer: "helm-controller"},
		"two writers":                   {rel: rel(3, release.StatusDeployed), hr: hr(false), guard: GuardArmed, writer: "BOTH: warning"},
		"gone, active":                  {relErr: gone, hr: hr(false), guard: GuardArmed, writer: "helm-controller will install it again"},
		"gone, suspended":               {relErr: gone, hr: hr(true), guard: GuardArmed, writer: "nobody: the release is gone"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &Self{Namespace: "apps"}
			writer, stuck := s.judge("app", tc.rel, tc.relErr, tc.hr, tc.guard)
			if !strings.Contains(writer, tc.writer) {
				t.Errorf("writer %q, want it to contain %q", writer, tc.writer)
			}
			if (tc.stuck == "") != (stuck == "") || !strings.Contains(stuck, tc.stuck) {
				t.Errorf("stuck %q, want %q", stuck, tc.stuck)
			}
		})
	}
}

// TestReleaseError: a release that does not exist is the user's mistake, and says where to
// look; other errors name the release.
func TestReleaseError(t *testing.T) {
	var in *InputError
	if err := ReleaseError("apps", "app", driver.ErrReleaseNotFound); !errors.As(err, &in) || !strings.Contains(err.Error(), "helm list -n apps") {
		t.Errorf("missing release: %v", err)
	}
	if err := ReleaseError("apps", "app", errors.New("boom")); errors.As(err, &in) || err.Error() != "release apps/app: boom" {
		t.Errorf("other error: %v", err)
	}
}
