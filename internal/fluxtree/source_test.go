package fluxtree

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestSameRepository(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"https://github.com/org/fleet.git", "git@github.com:org/fleet.git", true},
		{"ssh://git@github.com/org/fleet", "https://github.com/org/fleet", true},
		{"https://github.com/org/fleet", "https://github.com/org/other", false},
		{"https://GitHub.com/Org/Fleet/", "https://github.com/org/fleet.git", true},
	} {
		if got := sameRepository(c.a, c.b); got != c.want {
			t.Errorf("sameRepository(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestCopyMatching follows an ArtifactGenerator's copy rules: a directory's files under a
// destination directory, a glob's, one file renamed.
func TestCopyMatching(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"apps/base/podinfo/release.yaml", "apps/base/podinfo/kustomization.yaml", "apps/prod/values.yaml", "deploy/a.yaml", "deploy/b.json", "deploy/sub/c.yaml"} {
		p := filepath.Join(src, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		pattern, to string
		intoDir     bool
		want        []string
	}{
		{"apps/base/**", "base", true, []string{"base/podinfo/kustomization.yaml", "base/podinfo/release.yaml"}},
		{"deploy/*.yaml", "out", true, []string{"out/a.yaml"}},
		{"deploy/**/*.yaml", "out", true, []string{"out/a.yaml", "out/sub/c.yaml"}},
		{"apps/prod/values.yaml", "env.yaml", false, []string{"env.yaml"}},
		{"apps/prod/values.yaml", "env", true, []string{"env/values.yaml"}},
	} {
		dst := t.TempDir()
		if err := copyMatching(src, c.pattern, filepath.Join(dst, c.to), c.intoDir); err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		var got []string
		_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dst, p)
				got = append(got, filepath.ToSlash(rel))
			}
			return err
		})
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s to %s: got %v, want %v", c.pattern, c.to, got, c.want)
		}
	}
	if err := copyMatching(src, "nothing/**", t.TempDir(), true); err == nil {
		t.Error("a rule matching no file: want an error")
	}
}
