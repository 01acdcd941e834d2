package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/live"
)

type fakeGetter struct {
	err       error
	suspended bool
}

func (f fakeGetter) Get(context.Context, string, string, string, string, string) (map[string]any, error) {
	if f.err != nil {
		return nil, f.err
	}
	return map[string]any{"kind": "HelmRelease", "spec": map[string]any{"suspend": f.suspended}}, nil
}

// TestBracket: suspended on install, while the HelmRelease does not exist and while it is
// suspended (the bracket stays open through a CLI write); adopted (kept, guard armed) only when
// it exists, is active and this is an upgrade; an error when Flux's CRDs are absent; suspended
// with a warning when the lookup fails.
func TestBracket(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}, "app")
	tests := map[string]struct {
		get         fakeGetter
		install     bool
		want        SelfState
		wantErr     string
		wantWarning bool
	}{
		"active, upgrade":    {get: fakeGetter{}, want: SelfState{Adopted: true}},
		"active, install":    {get: fakeGetter{}, install: true, want: SelfState{Suspend: true}},
		"suspended, upgrade": {get: fakeGetter{suspended: true}, want: SelfState{Suspend: true}},
		"absent":             {get: fakeGetter{err: notFound}, want: SelfState{Suspend: true}},
		"no Flux CRDs":       {get: fakeGetter{err: fmt.Errorf("HelmRelease.helm.toolkit.fluxcd.io: %w", live.ErrNotServed)}, wantErr: "has no Flux CRDs"},
		"lookup forbidden":   {get: fakeGetter{err: errors.New("forbidden")}, want: SelfState{Suspend: true}, wantWarning: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := bracket(context.Background(), tc.get, "https://api", "apps", "app", tc.install)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			warning := got.Warning
			got.Warning = ""
			if err != nil || got != tc.want {
				t.Fatalf("state = %+v, %v; want %+v", got, err, tc.want)
			}
			if (warning != "") != tc.wantWarning {
				t.Errorf("warning %q", warning)
			}
		})
	}
}

// TestGuardServed: the CLI guard needs Kubernetes 1.30 (GA admission policies); below it,
// render --self refuses while the guard is on, naming the way out.
func TestGuardServed(t *testing.T) {
	for _, tc := range []struct {
		guard   bool
		version string
		wantErr bool
	}{
		{true, "v1.34.2", false},
		{true, "v1.30.0", false},
		{true, "v1.29.9-gke.1", true},
		{false, "v1.29.9", false},
		{true, "not a version", false}, // left to the API server
	} {
		err := GuardServed(tc.guard, "https://c", tc.version)
		if (err != nil) != tc.wantErr {
			t.Errorf("guard %v on %s: err %v, want error %v", tc.guard, tc.version, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--self-guard=false") {
			t.Errorf("the refusal does not name --self-guard=false: %v", err)
		}
	}
}
