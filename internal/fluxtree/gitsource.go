package fluxtree

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
)

// gitSources says which GitRepositories are the repository read, at the revision read, and
// gives each the files of its artifact as source-controller archives them. It is safe for
// concurrent use (renders read chart directories from it at once).
type gitSources struct {
	root, work string
	files      *scanned
	// ignored are the working tree's files Git ignores: never in an artifact.
	ignored ignoredFiles
	// named are the GitRepositories --source names ("namespace/name").
	named []string
	// remote is the repository's URL (its git remote), "" when unknown; bootURLs and
	// bootRefs are the URLs and references (see gitRef) of the bootstrap GitRepositories: those
	// a Kustomization whose path holds its own file reads.
	remote             string
	bootURLs, bootRefs []string

	mu       sync.Mutex
	patterns []gitignore.Pattern // the .sourceignore files' (loaded once)
	loaded   bool
	views    map[string]view // by viewKey
}

// view is one artifact's directory, or why it could not be made.
type view struct {
	dir string
	err error
}

// newGitSources finds the bootstrap GitRepositories of the files scanned.
func newGitSources(root string, o Options, files *scanned) *gitSources {
	g := &gitSources{root: root, work: o.Work, files: files, named: o.Sources, remote: o.RemoteURL}
	for _, k := range files.objects {
		if k.group != kustomizeGroup || k.kind != "Kustomization" {
			continue
		}
		spec, _ := k.obj["spec"].(map[string]any)
		ref, _ := spec["sourceRef"].(map[string]any)
		if str(ref, "kind") != "GitRepository" || !appliesItself(k.obj, k.file) {
			continue
		}
		ns := str(ref, "namespace")
		if ns == "" {
			ns = k.namespace
		}
		if repo := files.find(sourceGroup, "GitRepository", ns, str(ref, "name")); repo != nil {
			rs, _ := repo["spec"].(map[string]any)
			g.bootURLs = append(g.bootURLs, str(rs, "url"))
			g.bootRefs = append(g.bootRefs, gitRef(rs))
		}
	}
	return g
}

// find returns the object of the files with that identity (an object written with no
// namespace counts as in any), nil when there is none.
func (s *scanned) find(group, kind, ns, name string) map[string]any {
	for _, o := range s.objects {
		if o.group == group && o.kind == kind && o.name == name && (o.namespace == ns || o.namespace == "") {
			return o.obj
		}
	}
	return nil
}

// this says whether the GitRepository ns/name (repo: its object, nil when neither the
// context nor the files hold it) is the repository read at the revision read, and when not,
// why. boot: a Kustomization whose path holds its own file reads it (the bootstrap source).
//
// It is when --source names it, when it is a bootstrap source, and else when its URL is the
// repository's (its remote's, or the bootstrap source's when no remote is known) and it follows
// the reference a bootstrap source follows: a GitRepository of this repository's URL that
// follows another branch, a tag or a commit reads another revision than the one previewed.
// With nothing to compare with (no object, no remote and no bootstrap source), it is.
func (g *gitSources) this(ns, name string, repo map[string]any, boot bool) (bool, string) {
	if boot || slices.Contains(g.named, ns+"/"+name) || repo == nil {
		return true, ""
	}
	spec, _ := repo["spec"].(map[string]any)
	url := str(spec, "url")
	switch {
	case g.remote != "":
		if !sameRepository(url, g.remote) {
			return false, fmt.Sprintf("its URL %s is not this repository's (%s)", url, g.remote)
		}
	case len(g.bootURLs) > 0:
		if !slices.ContainsFunc(g.bootURLs, func(u string) bool { return sameRepository(url, u) }) {
			return false, fmt.Sprintf("its URL %s is not the bootstrap GitRepository's (%s)", url, g.bootURLs[0])
		}
	}
	if ref := gitRef(spec); len(g.bootRefs) > 0 && !slices.Contains(g.bootRefs, ref) {
		return false, fmt.Sprintf("it follows %s of this repository, and the preview reads the revision its bootstrap GitRepository follows (%s)", ref, g.bootRefs[0])
	}
	return true, ""
}

// gitRef is the reference a GitRepository's spec follows, as source-controller resolves it: a
// commit first, then a reference name, a tag, a semver range, a branch ("master" when none).
// xref: fluxcd/pkg/git gogit/client.go clone (the order), git.DefaultBranch.
func gitRef(spec map[string]any) string {
	ref, _ := spec["ref"].(map[string]any)
	switch {
	case str(ref, "commit") != "":
		return "commit " + str(ref, "commit")
	case str(ref, "name") != "":
		n := str(ref, "name")
		if b, ok := strings.CutPrefix(n, "refs/heads/"); ok {
			return "branch " + b
		}
		if t, ok := strings.CutPrefix(n, "refs/tags/"); ok {
			return "tag " + t
		}
		return "reference " + n
	case str(ref, "tag") != "":
		return "tag " + str(ref, "tag")
	case str(ref, "semver") != "":
		return "semver " + str(ref, "semver")
	case str(ref, "branch") != "":
		return "branch " + str(ref, "branch")
	}
	return "branch master"
}

// dir is the directory holding the artifact source-controller would make of this repository
// for the GitRepository repo (nil: one the tree does not hold, with no ignore rules of its
// own): the checkout's regular files less those its ignore rules exclude (see excluded), and
// only those under spec.sparseCheckout's directories when it has some. It is the root itself
// when that excludes nothing; else the files are linked (or copied) into a directory of their
// own under the work directory, made once per set of rules.
func (g *gitSources) dir(repo map[string]any) (string, error) {
	spec, _ := repo["spec"].(map[string]any)
	if inc, _ := spec["include"].([]any); len(inc) > 0 {
		return "", fmt.Errorf("its spec.include adds other GitRepositories' artifacts, which diff tree does not read: preview without it")
	}
	ignore, hasIgnore := spec["ignore"].(string)
	var sparse []string
	if s, _ := spec["sparseCheckout"].([]any); len(s) > 0 {
		for _, d := range s {
			ds, _ := d.(string)
			sparse = append(sparse, cleanRel(ds))
		}
	}
	key := fmt.Sprintf("%t\x00%s\x00%s", hasIgnore, ignore, strings.Join(sparse, "\x00"))
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.views[key]; ok {
		return v.dir, v.err
	}
	dir, err := g.makeView(ignore, sparse)
	if err != nil {
		err = fmt.Errorf("its artifact: %w", err)
	}
	if g.views == nil {
		g.views = map[string]view{}
	}
	g.views[key] = view{dir: dir, err: err}
	return dir, err
}

// makeView makes one artifact's directory (see dir). The caller holds mu.
func (g *gitSources) makeView(ignore string, sparse []string) (string, error) {
	domain := strings.Split(g.root, string(filepath.Separator))
	if !g.loaded {
		ps, err := sourceignore.LoadIgnorePatterns(g.root, domain)
		if err != nil {
			return "", fmt.Errorf("reading its .sourceignore files: %w", err)
		}
		g.patterns, g.loaded = ps, true
	}
	ps := append([]gitignore.Pattern{}, g.patterns...)
	ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(ignore), domain)...)
	keep, dropped, err := artifactFiles(g.root, ps, domain, sparse, g.ignored)
	if err != nil {
		return "", err
	}
	if dropped == 0 {
		return g.root, nil
	}
	dst, err := os.MkdirTemp(g.work, "git-")
	if err != nil {
		return "", err
	}
	for _, rel := range keep {
		if err := linkOrCopy(filepath.Join(g.root, rel), filepath.Join(dst, rel)); err != nil {
			return "", err
		}
	}
	return dst, nil
}

// artifactFiles lists the regular files under root (relative paths, sorted) that
// source-controller archives into a GitRepository's artifact, and counts those it leaves out:
// files its ignore patterns match, anything that is not a regular file (symlinks), with sparse
// directories the files outside them, and in a working tree the files Git ignores (ignored:
// never committed, never cloned). With no patterns of the repository's or the
// GitRepository's own, the default exclusions apply (VCS files, CI configurations, images and
// archives, .sops.yaml, .goreleaser.yml, .flux.yaml); with some, only the VCS ones and theirs.
// The .git directory is not walked: all of it is excluded.
// xref: fluxcd/source-controller internal/controller/gitrepository_controller.go
// reconcileArtifact; fluxcd/pkg/artifact storage/archive.go SourceIgnoreFilter, Archive.
func artifactFiles(root string, ps []gitignore.Pattern, domain, sparse []string, ignored ignoredFiles) ([]string, int, error) {
	matcher := sourceignore.NewDefaultMatcher(ps, domain)
	if len(ps) > 0 {
		matcher = sourceignore.NewMatcher(append(sourceignore.VCSPatterns(domain), ps...))
	}
	var keep []string
	dropped := 0
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if p != root && fi.Name() == ".git" && filepath.Dir(p) == root {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case !fi.Mode().IsRegular(), ignored.has(rel),
			matcher.Match(strings.Split(p, string(filepath.Separator)), false),
			len(sparse) > 0 && !slices.ContainsFunc(sparse, func(d string) bool { return d == "." || strings.HasPrefix(rel, d+"/") }):
			dropped++
		default:
			keep = append(keep, filepath.FromSlash(rel))
		}
		return nil
	})
	sort.Strings(keep)
	return keep, dropped, err
}

// linkOrCopy makes dst the file src: a hard link where both are on one file system, else a copy.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	return copyFile(src, dst)
}
