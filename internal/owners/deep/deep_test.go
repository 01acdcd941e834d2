package deep

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
)

const deepStream = `---
apiVersion: v1
kind: Secret
metadata:
  name: b-values
  namespace: flux-system
data:
  # shared: {enabled: true}, token: SECRET-MARKER-7f3a
  values.yaml: c2hhcmVkOiB7ZW5hYmxlZDogdHJ1ZX0KdG9rZW46IFNFQ1JFVC1NQVJLRVItN2YzYQo=
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: a
  namespace: flux-system
spec:
  targetNamespace: apps
  chart:
    spec:
      chart: deep-a
      sourceRef: {kind: HelmRepository, name: charts}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: b
  namespace: flux-system
spec:
  targetNamespace: apps
  chart:
    spec:
      chart: deep-b
      sourceRef: {kind: HelmRepository, name: charts}
  valuesFrom:
    - kind: Secret
      name: b-values
`

func deepCheck(t *testing.T, stream string, dirs map[string]string) ([]owners.Finding, error) {
	t.Helper()
	s, err := manifest.Split([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Objects(s)
	if err != nil {
		t.Fatal(err)
	}
	return Check(context.Background(), owners.NewChecker(objs, owners.Options{Namespace: "flux-system", Release: "platform"}), objs, Options{ChartDirs: dirs})
}

// TestDeep: two HelmReleases' charts render one HelmRepository; deep-b only because a
// valuesFrom Secret in the stream switches it on. The finding names both releases and the
// object, and nothing of the Secret.
func TestDeep(t *testing.T) {
	dirs := map[string]string{"deep-a": "../../../testdata/charts/deep-a", "flux-system/b": "../../../testdata/charts/deep-b"}
	findings, err := deepCheck(t, deepStream, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(findings), findings)
	}
	f := findings[0]
	for _, want := range []string{"HelmRepository.source.toolkit.fluxcd.io apps/shared is rendered by HelmRelease flux-system/a", "and HelmRelease flux-system/b"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, f.Message)
		}
	}
	if f.ID != owners.IDDeep || f.Object != "HelmRepository.source.toolkit.fluxcd.io apps/shared" {
		t.Errorf("finding %s %s", f.ID, f.Object)
	}
	if strings.Contains(f.Message, "SECRET-MARKER") {
		t.Errorf("a Secret's value leaked into the message")
	}

	// Without the Secret's values deep-b renders no HelmRepository: no finding.
	noValues := strings.Replace(deepStream, "  valuesFrom:\n    - kind: Secret\n      name: b-values\n", "", 1)
	if findings, err := deepCheck(t, noValues, dirs); err != nil || len(findings) != 0 {
		t.Errorf("without valuesFrom: %v findings, err %v", findings, err)
	}
}

func TestDeepCouldNotCheck(t *testing.T) {
	tests := map[string]struct {
		dirs map[string]string
		want string
	}{
		"no chart dir, no cluster": {map[string]string{"deep-a": "../../../testdata/charts/deep-a"}, "HelmRepository flux-system/charts is neither in the stream nor"},
		"both charts given":        {map[string]string{"deep-a": "../../../testdata/charts/deep-a", "deep-b": "../../../testdata/charts/deep-b"}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := deepCheck(t, deepStream, tc.dirs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCouldNotCheck) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrCouldNotCheck containing %q", err, tc.want)
			}
		})
	}
	bad := strings.Replace(deepStream, "values.yaml: c2hh", "other.yaml: c2hh", 1)
	_, err := deepCheck(t, bad, map[string]string{"deep-a": "../../../testdata/charts/deep-a", "deep-b": "../../../testdata/charts/deep-b"})
	if err == nil || !strings.Contains(err.Error(), "key values.yaml: key not found") || strings.Contains(err.Error(), "SECRET-MARKER") {
		t.Errorf("missing key: %v", err)
	}
}
