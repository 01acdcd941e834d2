package fluxtree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
)

// writeFiles writes files (path relative to root: content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGitRef(t *testing.T) {
	for _, tc := range []struct {
		ref  map[string]any
		want string
	}{
		{nil, "branch master"},
		{map[string]any{"branch": "main"}, "branch main"},
		{map[string]any{"branch": "main", "commit": "0a1b2c"}, "commit 0a1b2c"},
		{map[string]any{"tag": "v1", "semver": ">=1"}, "tag v1"},
		{map[string]any{"semver": ">=1", "branch": "main"}, "semver >=1"},
		{map[string]any{"name": "refs/heads/main", "tag": "v1"}, "branch main"},
		{map[string]any{"name": "refs/tags/v2"}, "tag v2"},
		{map[string]any{"name": "refs/pull/7/head"}, "reference refs/pull/7/head"},
	} {
		spec := map[string]any{}
		if tc.ref != nil {
			spec["ref"] = tc.ref
		}
		if got := gitRef(spec); got != tc.want {
			t.Errorf("gitRef(%v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

// TestGitSourcesThis: a GitRepository is the revision previewed when it is the bootstrap
// source or named by --source, or has this repository's URL and follows what the bootstrap
// source follows; another URL, or this URL at another branch, a tag, a commit, is not.
func TestGitSourcesThis(t *testing.T) {
	repo := func(url string, ref map[string]any) map[string]any {
		spec := map[string]any{"url": url}
		if ref != nil {
			spec["ref"] = ref
		}
		return map[string]any{"spec": spec}
	}
	main := map[string]any{"branch": "main"}
	withBoot := &gitSources{remote: "git@github.com:o/fleet.git", bootURLs: []string{"ssh://git@github.com/o/fleet"}, bootRefs: []string{"branch main"}, named: []string{"apps/named"}}
	noRemote := &gitSources{bootURLs: []string{"https://github.com/o/fleet"}, bootRefs: []string{"branch main"}}
	nothing := &gitSources{}
	for _, tc := range []struct {
		name string
		g    *gitSources
		id   string
		repo map[string]any
		boot bool
		want string // "" this revision, else a part of why not
	}{
		{"same URL and branch", withBoot, "flux-system/other", repo("https://github.com/o/fleet.git", main), false, ""},
		{"another repository", withBoot, "apps/charts", repo("https://github.com/o/charts", main), false, "is not this repository's"},
		{"another branch", withBoot, "apps/dev-team", repo("https://github.com/o/fleet", map[string]any{"branch": "dev-team"}), false, "follows branch dev-team"},
		{"a tag", withBoot, "apps/pinned", repo("https://github.com/o/fleet", map[string]any{"tag": "v1.2.0"}), false, "follows tag v1.2.0"},
		{"no ref: master", withBoot, "apps/default", repo("https://github.com/o/fleet", nil), false, "follows branch master"},
		{"named by --source", withBoot, "apps/named", repo("https://github.com/o/charts", nil), false, ""},
		{"the bootstrap source", withBoot, "flux-system/flux-system", repo("https://example.com/elsewhere", nil), true, ""},
		{"not in the tree", withBoot, "apps/unknown", nil, false, ""},
		{"no remote: the bootstrap's URL", noRemote, "apps/x", repo("https://github.com/o/fleet", main), false, ""},
		{"no remote: another URL", noRemote, "apps/x", repo("https://github.com/o/charts", main), false, "is not the bootstrap GitRepository's"},
		{"nothing to compare with", nothing, "apps/x", repo("https://github.com/o/charts", map[string]any{"tag": "v1"}), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, name, _ := strings.Cut(tc.id, "/")
			ok, why := tc.g.this(ns, name, tc.repo, tc.boot)
			if tc.want == "" && !ok {
				t.Fatalf("not this revision: %s", why)
			}
			if tc.want != "" && (ok || !strings.Contains(why, tc.want)) {
				t.Fatalf("this revision %t, why %q; want not, saying %q", ok, why, tc.want)
			}
		})
	}
}

// TestArtifactFiles: the files a GitRepository's artifact holds, as source-controller
// archives them: the default exclusions when neither a .sourceignore nor spec.ignore gives
// patterns; with some, only the VCS files and theirs; sparseCheckout's directories only;
// never a symlink; the .git directory never walked.
func TestArtifactFiles(t *testing.T) {
	files := map[string]string{
		".git/config":                  "[core]\n",
		".gitignore":                   "*.tmp\n",
		".github/workflows/ci.yaml":    "on: push\n",
		".sops.yaml":                   "creation_rules: []\n",
		"clusters/prod/.sops.yaml":     "creation_rules: []\n",
		"clusters/prod/apps.yaml":      "kind: Kustomization\n",
		"clusters/prod/diagram.png":    "png",
		"docs/example.yaml":            "kind: HelmRelease\n",
		"apps/podinfo/release.yaml":    "kind: HelmRelease\n",
		"apps/podinfo/values.yaml":     "a: 1\n",
		"apps/podinfo/chart.tar.gz":    "gz",
		"apps/podinfo/notes/README.md": "# notes\n",
	}
	// all: every file of the tree (the .sourceignore files too: source-controller keeps
	// them) but .git's and those named.
	all := func(extra map[string]string, rel ...string) []string {
		var out []string
		for _, m := range []map[string]string{files, extra} {
			for f := range m {
				if !strings.HasPrefix(f, ".git/") && !slices.Contains(rel, f) {
					out = append(out, filepath.FromSlash(f))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	dotSourceignore := map[string]string{".sourceignore": "# docs are not deployed\ndocs/\n*.md\n"}
	inPodinfo := map[string]string{"apps/podinfo/.sourceignore": "values.yaml\n"}
	for _, tc := range []struct {
		name         string
		sourceignore map[string]string // .sourceignore files to add
		ignore       string            // the GitRepository's spec.ignore
		sparse       []string
		want         []string
	}{
		{name: "default exclusions", want: all(nil, ".gitignore", ".github/workflows/ci.yaml", ".sops.yaml", "clusters/prod/.sops.yaml", "clusters/prod/diagram.png", "apps/podinfo/chart.tar.gz")},
		{name: "a .sourceignore replaces the defaults but the VCS ones",
			sourceignore: dotSourceignore,
			want:         all(dotSourceignore, ".gitignore", "docs/example.yaml", "apps/podinfo/notes/README.md")},
		{name: "a .sourceignore in a directory applies below it",
			sourceignore: inPodinfo,
			want:         all(inPodinfo, ".gitignore", "apps/podinfo/values.yaml")},
		{name: "spec.ignore, as Flux's examples write it", ignore: "/*\n!/apps/\n",
			want: []string{filepath.FromSlash("apps/podinfo/chart.tar.gz"), filepath.FromSlash("apps/podinfo/notes/README.md"), filepath.FromSlash("apps/podinfo/release.yaml"), filepath.FromSlash("apps/podinfo/values.yaml")}},
		{name: "sparseCheckout", sparse: []string{"clusters/prod"},
			want: []string{filepath.FromSlash("clusters/prod/apps.yaml")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, files)
			writeFiles(t, root, tc.sourceignore)
			if err := os.Symlink("release.yaml", filepath.Join(root, "apps/podinfo/link.yaml")); err != nil {
				t.Fatal(err)
			}
			domain := strings.Split(root, string(filepath.Separator))
			ps, err := sourceignore.LoadIgnorePatterns(root, domain)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(tc.ignore), domain)...)
			got, dropped, err := artifactFiles(root, ps, domain, tc.sparse, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("artifact files:\n got %q\nwant %q", got, tc.want)
			}
			// The symlink and whatever was left out, never the .git directory's files.
			total := len(files) - 1 + len(tc.sourceignore) + 1
			if dropped != total-len(got) {
				t.Errorf("dropped %d, want %d", dropped, total-len(got))
			}
		})
	}
	var none []gitignore.Pattern
	if _, dropped, err := artifactFiles(t.TempDir(), none, nil, nil, nil); err != nil || dropped != 0 {
		t.Errorf("an empty tree: dropped %d, %v", dropped, err)
	}
}

// TestLoadReadsTheArtifact: a tree is built from its artifact, as source-controller makes it
// for each GitRepository: a .sops.yaml beside the bootstrap Kustomization (where Flux's SOPS
// guide writes it) is not a manifest, a directory spec.ignore leaves out is not there (and its
// patterns replace the default exclusions), and the repository's own files are untouched; a
// Kustomization whose GitRepository follows another branch of the repository is skipped,
// named, and a HelmRelease's chart from it is refused, named.
func TestLoadReadsTheArtifact(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, ref: {branch: main}, url: https://github.com/o/fleet}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"clusters/prod/.sops.yaml": "creation_rules:\n  - path_regex: .*.yaml\n    age: age1example\n",
		"clusters/prod/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: docs, namespace: flux-system}
spec: {interval: 10m, path: ./docs, prune: true, sourceRef: {kind: GitRepository, name: no-docs}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: no-docs, namespace: flux-system}
spec: {interval: 1m, ref: {branch: main}, url: https://github.com/o/fleet, ignore: "/docs/"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: dev-team, namespace: flux-system}
spec: {interval: 1m, ref: {branch: dev-team}, url: https://github.com/o/fleet.git}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: dev-team, namespace: flux-system}
spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: dev-team}}
`,
		"apps/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 1h
  chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: dev-team, namespace: flux-system}}}
`,
		"docs/example.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: example, namespace: docs}
spec: {interval: 1h, chart: {spec: {chart: x, sourceRef: {kind: HelmRepository, name: r}}}}
`,
	})
	tree, err := Load(context.Background(), root, Options{RemoteURL: "git@github.com:o/fleet.git", Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.HelmReleases) != 1 || tree.HelmReleases[0].Name != "web" {
		var names []string
		for _, h := range tree.HelmReleases {
			names = append(names, h.Key())
		}
		t.Fatalf("HelmReleases %v, want apps/web alone; problems %v", names, tree.Problems)
	}
	// The docs Kustomization's path is not in the artifact: a problem, named, as
	// kustomize-controller reports it.
	if len(tree.Problems) != 1 || !strings.Contains(tree.Problems[0].Error(), "flux-system/docs") {
		t.Errorf("problems %v, want the docs Kustomization's alone", tree.Problems)
	}
	if len(tree.Skipped) != 1 || !strings.Contains(tree.Skipped[0], "GitRepository flux-system/dev-team") || !strings.Contains(tree.Skipped[0], "follows branch dev-team") {
		t.Errorf("skipped %q, want the dev-team Kustomization, saying it follows branch dev-team", tree.Skipped)
	}
	if _, _, err := tree.GitRepository(tree.HelmReleases[0], "flux-system", "dev-team"); err == nil || !strings.Contains(err.Error(), "follows branch dev-team") {
		t.Errorf("the chart's GitRepository: %v, want it refused for its branch", err)
	}
	for _, tc := range []struct {
		repo      string
		in, notIn string
	}{
		{"flux-system", "docs/example.yaml", "clusters/prod/.sops.yaml"},
		{"no-docs", "clusters/prod/.sops.yaml", "docs/example.yaml"},
	} {
		dir, _, err := tree.GitRepository(tree.HelmReleases[0], "flux-system", tc.repo)
		if err != nil {
			t.Fatal(err)
		}
		if dir == root {
			t.Errorf("GitRepository %s: the artifact is the checkout", tc.repo)
		}
		if _, err := os.Stat(filepath.Join(dir, tc.in)); err != nil {
			t.Errorf("GitRepository %s: %s not in the artifact: %v", tc.repo, tc.in, err)
		}
		if _, err := os.Stat(filepath.Join(dir, tc.notIn)); !os.IsNotExist(err) {
			t.Errorf("GitRepository %s: %s in the artifact: %v", tc.repo, tc.notIn, err)
		}
		if _, err := os.Stat(filepath.Join(root, tc.notIn)); err != nil {
			t.Errorf("%s of the checkout: %v", tc.notIn, err)
		}
	}
}

// TestLoadLeavesGitIgnored: in a Git working tree, what Git ignores is in no artifact (never
// committed): a decrypted copy of a Secret kept beside its SOPS file does not clash with it in
// the generated kustomization, and a Kustomization in an ignored file is no root.
func TestLoadLeavesGitIgnored(t *testing.T) {
	root := t.TempDir()
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\nstringData: {password: %s}\n"
	writeFiles(t, root, map[string]string{
		".gitignore": "*.dec.yaml\nscratch/\n",
		"clusters/c/sync.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"clusters/c/creds.yaml":     fmt.Sprintf(secret, "committed"),
		"clusters/c/creds.dec.yaml": fmt.Sprintf(secret, "local-copy"),
		"scratch/try.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: scratch, namespace: flux-system}
spec: {interval: 1h, path: ./scratch, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	})
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Skipf("git init: %v: %s (the test needs git)", err, out)
	}
	tree, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Problems) != 0 {
		t.Errorf("problems %v, want none: the ignored copy is not built", tree.Problems)
	}
	if got := tree.Kustomization("clusters/c", "flux-system", "scratch"); got != nil {
		t.Errorf("the ignored file's Kustomization is applied")
	}
	if tree.Kustomization("clusters/c", "flux-system", "flux-system") == nil {
		t.Errorf("the bootstrap Kustomization is not applied")
	}
}
