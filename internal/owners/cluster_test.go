package owners

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// fakeCluster serves live metadata per kind and namespace and counts the LIST calls.
type fakeCluster struct {
	objects map[string][]live.Meta // "Kind/namespace"
	lists   int
	fail    error
}

func (f *fakeCluster) Namespaced(group, version, kind string) (bool, error) {
	if kind == "Widget" {
		return false, nil
	}
	return true, nil
}

func (f *fakeCluster) List(_ context.Context, group, version, kind, namespace string) ([]live.Meta, error) {
	f.lists++
	if f.fail != nil {
		return nil, f.fail
	}
	if kind == "Gadget" {
		return nil, fmt.Errorf("Gadget: %w", live.ErrNotServed)
	}
	return f.objects[kind+"/"+namespace], nil
}

func helmMeta(name, release, ns string, extra ...string) live.Meta {
	m := live.Meta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}, Annotations: map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns}}
	for i := 0; i+1 < len(extra); i += 2 {
		if strings.HasPrefix(extra[i], "label:") {
			m.Labels[strings.TrimPrefix(extra[i], "label:")] = extra[i+1]
		} else {
			m.Annotations[extra[i]] = extra[i+1]
		}
	}
	return m
}

func TestCluster(t *testing.T) {
	stream := `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ours
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: theirs
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept-live
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: unmanaged
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: flux
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: new
---
apiVersion: example.io/v1
kind: Gadget
metadata:
  name: g
---
apiVersion: example.io/v1
kind: Widget
metadata:
  name: w
`
	cl := &fakeCluster{objects: map[string][]live.Meta{
		"ConfigMap/apps": {
			helmMeta("ours", "web", "apps"),
			helmMeta("theirs", "connectivity", "apps"),
			helmMeta("kept", "old-web", "apps", "helm.sh/resource-policy", "keep"),
			helmMeta("kept-live", "cm", "apps", "helm.sh/resource-policy", "keep"),
			{Name: "unmanaged", Labels: map[string]string{"app.kubernetes.io/managed-by": "kustomize"}},
			helmMeta("flux", "apps-comp", "apps", "label:helm.toolkit.fluxcd.io/name", "comp", "label:helm.toolkit.fluxcd.io/namespace", "flux-system"),
		},
		"Widget/": {{Name: "w"}},
		// Helm's release storage: cm is installed; old-web was uninstalled with --keep-history.
		"Secret/apps": {
			{Name: "sh.helm.release.v1.cm.v1", Labels: map[string]string{"owner": "helm", "name": "cm", "status": "deployed", "version": "1"}},
			{Name: "sh.helm.release.v1.old-web.v3", Labels: map[string]string{"owner": "helm", "name": "old-web", "status": "uninstalled", "version": "3"}},
		},
	}}
	s, err := manifest.Split([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Objects(s)
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(objs, Options{Namespace: "apps", Release: "web", Scopes: ClusterScopes(cl)})
	findings, err := c.Cluster(context.Background(), objs, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		got[f.Object] = f.ID + ": " + f.Message
	}
	want := map[string]string{
		"ConfigMap apps/theirs":    "owned-by-another-release: ConfigMap apps/theirs, rendered by release apps/web (document 2 (line 6)), already belongs to release apps/connectivity",
		"ConfigMap apps/kept":      "kept-by-older-release: ConfigMap apps/kept, rendered by release apps/web (document 3 (line 11)), was kept in the cluster by release apps/old-web",
		"ConfigMap apps/kept-live": "owned-by-another-release: ConfigMap apps/kept-live, rendered by release apps/web (document 4 (line 16)), belongs to release apps/cm, which is installed and owns it",
		"ConfigMap apps/unmanaged": "owned-by-another-release: ConfigMap apps/unmanaged, rendered by release apps/web (document 5 (line 21)), already exists in the cluster and belongs to another tool (app.kubernetes.io/managed-by: kustomize)",
		"ConfigMap apps/flux":      "owned-by-helmrelease: ConfigMap apps/flux, rendered by release apps/web (document 6 (line 26)), already exists in the cluster and belongs to Flux HelmRelease flux-system/comp",
		"Widget.example.io w":      "owned-by-another-release: Widget.example.io w, rendered by release apps/web (document 9 (line 41)), already exists in the cluster and belongs to no Helm release",
	}
	for obj, prefix := range want {
		if !strings.HasPrefix(got[obj], prefix) {
			t.Errorf("%s:\n got  %q\n want %q...", obj, got[obj], prefix)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d: %v", len(got), len(want), got)
	}
	// One LIST per kind and namespace: ConfigMap/apps, Gadget/apps, Widget/"", and the release
	// storage of apps once (for the kept objects).
	if cl.lists != 4 {
		t.Errorf("%d LIST calls, want 4", cl.lists)
	}
}

func TestClusterErrors(t *testing.T) {
	s, _ := manifest.Split([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"))
	objs, _ := manifest.Objects(s)
	if _, err := NewChecker(objs, Options{Namespace: "apps"}).Cluster(context.Background(), objs, &fakeCluster{}); err == nil || !strings.Contains(err.Error(), "--release") {
		t.Errorf("no release: %v", err)
	}
	boom := errors.New("forbidden: configmaps is forbidden")
	if _, err := NewChecker(objs, Options{Namespace: "apps", Release: "r"}).Cluster(context.Background(), objs, &fakeCluster{fail: boom}); !errors.Is(err, boom) {
		t.Errorf("a failed LIST must fail the check, got %v", err)
	}
}
