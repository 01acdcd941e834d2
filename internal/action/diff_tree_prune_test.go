package action

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// TestKept: a HelmRelease the head no longer applies is deleted (its release uninstalled)
// only as kustomize-controller prunes it: its Kustomization prunes (spec.prune, not
// suspended, built), or the Kustomization that applied it is deleted with a deletionPolicy
// that deletes what it applied; never when it, or a Kustomization above it, is marked
// kustomize.toolkit.fluxcd.io/prune: disabled.
func TestKept(t *testing.T) {
	const root = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, prune: %s, sourceRef: {kind: GitRepository, name: flux-system}}
`
	apps := func(spec, meta string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system" + meta +
			"}\nspec: {interval: 1h, path: ./apps, sourceRef: {kind: GitRepository, name: flux-system}" + spec + "}\n"
	}
	hr := func(meta string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps" + meta +
			"}\nspec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}\n"
	}
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: apps}\n"
	load := func(files map[string]string) *fluxtree.Tree { return loadTree(t, files, fluxtree.Options{}) }
	for name, tc := range map[string]struct {
		base, head map[string]string
		want       string // "" deleted, else a part of why it stays
	}{
		"dropped, pruned": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr(""), "apps/other.yaml": other},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/other.yaml": other},
		},
		"dropped, no prune": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: false", ""), "apps/web.yaml": hr(""), "apps/other.yaml": other},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: false", ""), "apps/other.yaml": other},
			want: "Kustomization flux-system/apps does not prune",
		},
		"dropped, suspended": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr(""), "apps/other.yaml": other},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true, suspend: true", ""), "apps/other.yaml": other},
			want: "is suspended in the head",
		},
		"dropped, prune disabled": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr(", annotations: {kustomize.toolkit.fluxcd.io/prune: Disabled}"), "apps/other.yaml": other},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/other.yaml": other},
			want: "marked kustomize.toolkit.fluxcd.io/prune: Disabled",
		},
		"its Kustomization deleted, MirrorPrune": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "apps/web.yaml": hr("")},
		},
		"its Kustomization deleted, Orphan": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true, deletionPolicy: Orphan", ""), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "apps/web.yaml": hr("")},
			want: "deletionPolicy Orphan",
		},
		"its Kustomization deleted, no prune, Delete": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: false, deletionPolicy: Delete", ""), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "apps/web.yaml": hr("")},
		},
		"its Kustomization dropped by a root that does not prune": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "false", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "false", 1), "apps/web.yaml": hr("")},
			want: "the head no longer applies Kustomization flux-system/apps, and Kustomization flux-system/flux-system does not prune",
		},
		"its Kustomization marked prune: disabled": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ", labels: {kustomize.toolkit.fluxcd.io/prune: disabled}"), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "apps/web.yaml": hr("")},
			want: "Kustomization flux-system/apps is marked",
		},
		"its Kustomization fails to build": {
			base: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/web.yaml": hr("")},
			head: map[string]string{"clusters/c/sync.yaml": strings.Replace(root, "%s", "true", 1), "clusters/c/apps.yaml": apps(", prune: true", ""), "apps/other.yaml": "kind: [broken\n"},
			want: "cannot be built in the head",
		},
	} {
		t.Run(name, func(t *testing.T) {
			bt, ht := load(tc.base), load(tc.head)
			if len(bt.HelmReleases) != 1 {
				t.Fatalf("base HelmReleases %d, problems %v", len(bt.HelmReleases), bt.Problems)
			}
			for _, h := range ht.HelmReleases {
				if h.Key() == bt.HelmReleases[0].Key() {
					t.Fatalf("the head still applies %s", h.Key())
				}
			}
			got := kept(bt.HelmReleases[0], bt, ht)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("kept: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMoveNote: a HelmRelease that moves from a Kustomization that prunes to another is
// warned of; one marked prune: disabled, or leaving one that does not prune, is not.
func TestMoveNote(t *testing.T) {
	sync := func(prune string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1h, path: ./apps, prune: ` + prune + `, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec: {interval: 1h, path: ./infra, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`
	}
	hr := func(meta string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps" + meta +
			"}\nspec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}\n"
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: apps}\n"
	}
	load := func(files map[string]string) *fluxtree.Tree { return loadTree(t, files, fluxtree.Options{}) }
	for name, tc := range map[string]struct {
		prune, meta string
		want        bool
	}{
		"from one that prunes":         {prune: "true", want: true},
		"marked prune disabled":        {prune: "true", meta: ", annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}"},
		"from one that does not prune": {prune: "false"},
	} {
		t.Run(name, func(t *testing.T) {
			bt := load(map[string]string{"clusters/c/sync.yaml": sync(tc.prune), "apps/hr.yaml": hr(tc.meta), "apps/cm.yaml": cm("a"), "infra/cm.yaml": cm("i")})
			ht := load(map[string]string{"clusters/c/sync.yaml": sync(tc.prune), "infra/hr.yaml": hr(tc.meta), "apps/cm.yaml": cm("a"), "infra/cm.yaml": cm("i")})
			got := moveNote(treePair{base: bt.HelmReleases[0], head: ht.HelmReleases[0]}, bt, ht)
			if (got != "") != tc.want || tc.want && !strings.Contains(got, "HelmRelease apps/web (clusters/c) moves from Kustomization flux-system/apps to flux-system/infra") {
				t.Errorf("note %q, want one: %v", got, tc.want)
			}
		})
	}
}

// loadTree writes files (path: content) into a directory and reads it as a tree with o (its
// Work a directory of the test's).
func loadTree(t *testing.T, files map[string]string, o fluxtree.Options) *fluxtree.Tree {
	t.Helper()
	dir := writeDir(t, files)
	o.Work = t.TempDir()
	tree, err := fluxtree.Load(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// writeDir writes files (path: content) into a new directory of the test's, and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
