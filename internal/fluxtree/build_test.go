package fluxtree

import (
	"context"
	"strings"
	"testing"
)

// TestLoadNotesUnservedVersions: an object of Flux's groups in a version its current
// controllers no longer serve is noted, named with what applies it and the version to move to;
// one in a served version is not, nor one of another group.
func TestLoadNotesUnservedVersions(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"clusters/c/sync.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1beta2
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1h, path: ./apps, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"apps/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2beta1
kind: HelmRelease
metadata: {name: old, namespace: apps}
spec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: new, namespace: apps}
spec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: a, namespace: apps}
spec: {providerRef: {name: p}, eventSources: [{kind: HelmRelease, name: new}]}
`,
	})
	tree, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"HelmRelease apps/old (Kustomization flux-system/apps) is helm.toolkit.fluxcd.io/v2beta1, which Flux's current controllers no longer serve: applying it fails there; move it to helm.toolkit.fluxcd.io/v2",
		"Kustomization flux-system/apps (Kustomization flux-system/flux-system) is kustomize.toolkit.fluxcd.io/v1beta2, which Flux's current controllers no longer serve: applying it fails there; move it to kustomize.toolkit.fluxcd.io/v1",
	}
	if strings.Join(tree.Unserved, "\n") != strings.Join(want, "\n") {
		t.Errorf("unserved:\n%s\nwant:\n%s", strings.Join(tree.Unserved, "\n"), strings.Join(want, "\n"))
	}
	if len(tree.HelmReleases) != 2 {
		t.Errorf("HelmReleases %d, want both still read", len(tree.HelmReleases))
	}
}
