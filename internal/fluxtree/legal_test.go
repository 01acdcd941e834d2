package fluxtree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadUnderAnyPath: a checkout whose path kustomize's in-memory file system refuses (a
// Jenkins workspace "job@2", a directory with a space) is built from a copy that it takes:
// its HelmReleases are found, with no problem, and the files Git ignores are not copied.
func TestLoadUnderAnyPath(t *testing.T) {
	for _, tc := range []struct {
		name, dir string
		copy      bool
	}{
		{"jenkins", "job@2", true},
		{"space", "my fleet", true},
		{"plain", "fleet-1.2_x:y", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), tc.dir)
			writeFiles(t, root, operatorTree(map[string]string{
				"apps/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: age, namespace: flux-system}\nstringData: {key: k}\n",
				".gitignore":       "scratch/\n",
				"scratch/x.yaml":   "not: [yaml\n",
			}))
			if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			work := t.TempDir()
			tree, err := Load(context.Background(), root, Options{Work: work})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range tree.HelmReleases {
				names = append(names, h.Key())
			}
			if len(tree.Problems) > 0 || !slices.Contains(names, "flux/cluster: web/web") {
				t.Fatalf("problems %v, HelmReleases %v; want none, and web", tree.Problems, names)
			}
			if copied := strings.HasPrefix(tree.Root, work); copied != tc.copy {
				t.Errorf("read from %s: copied %v, want %v", tree.Root, copied, tc.copy)
			}
			if _, err := os.Stat(filepath.Join(tree.Root, "scratch")); tc.copy && err == nil {
				t.Errorf("the copy holds what Git ignores")
			}
		})
	}
	if kustomizable("/a/b c") || kustomizable("/w/job@2/x") || !kustomizable("/tmp/x-1_2.3:4") {
		t.Errorf("kustomizable: the names kustomize takes are letters, digits, '-', '_', '.', ':'")
	}
}
