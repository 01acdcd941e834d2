package fluxtree

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// source returns the directory a Kustomization's sourceRef gives it: this
// repository's artifact, or an ExternalArtifact an ArtifactGenerator makes from it by its copy rules.
// "" with no error: the source is another repository, or another revision of this one (the
// Kustomization is Skipped).
func (b *builder) source(ctx context.Context, k ksRef, p *pool) (string, error) {
	spec, _ := k.obj["spec"].(map[string]any)
	ref, _ := spec["sourceRef"].(map[string]any)
	kind, name, ns := str(ref, "kind"), str(ref, "name"), str(ref, "namespace")
	if ns == "" {
		ns = k.namespace
	}
	switch kind {
	case "":
		return b.root, nil
	case "GitRepository":
		repo := b.gitRepository(ns, name, p)
		if ok, why := b.git.this(ns, name, repo, appliesItself(k.obj, k.file)); !ok {
			b.tree.Skipped = append(b.tree.Skipped, fmt.Sprintf("Kustomization %s: its source GitRepository %s/%s is not the revision previewed: %s (pass --source %s/%s if it is)", k.id(), ns, name, why, ns, name))
			return "", nil
		}
		dir, err := b.git.dir(repo)
		if err != nil {
			return "", fmt.Errorf("sourceRef GitRepository %s/%s: %w", ns, name, err)
		}
		return dir, nil
	case "ExternalArtifact":
		return b.artifact(k, ns, name, p)
	}
	b.tree.Skipped = append(b.tree.Skipped, fmt.Sprintf("Kustomization %s: its source is %s %s/%s, not this repository", k.id(), kind, ns, name))
	return "", nil
}

// gitRepository is the GitRepository ns/name the context applies, or else the files hold; nil
// when neither does.
func (b *builder) gitRepository(ns, name string, p *pool) map[string]any {
	if repo, ok := p.objects[objectKey(sourceGroup, "GitRepository", ns, name)]; ok {
		return repo
	}
	return b.files.find(sourceGroup, "GitRepository", ns, name)
}

// sameRepository compares two Git URLs by host and path (https://github.com/o/r.git,
// ssh://git@github.com/o/r and git@github.com:o/r are one repository).
func sameRepository(a, b string) bool {
	norm := func(u string) string {
		u = strings.TrimSpace(strings.ToLower(u))
		if i := strings.Index(u, "://"); i >= 0 {
			u = u[i+3:]
		} else if at := strings.Index(u, "@"); at >= 0 {
			u = strings.Replace(u[at+1:], ":", "/", 1)
		}
		if at := strings.Index(u, "@"); at >= 0 && at < strings.Index(u+"/", "/") {
			u = u[at+1:]
		}
		return strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	}
	return norm(a) == norm(b)
}

// artifact makes the ExternalArtifact ns/name as the ArtifactGenerator that declares it would:
// each copy rule of its artifact, from this repository's files.
// xref: fluxcd/source-watcher api/v1beta1 artifactgenerator_types.go (CopyOperation).
func (b *builder) artifact(k ksRef, ns, name string, p *pool) (string, error) {
	key := ns + "/" + name
	if c, ok := b.artifacts[key]; ok {
		return c, nil
	}
	gen, art := b.generator(ns, name, p)
	if art == nil {
		return "", fmt.Errorf("sourceRef ExternalArtifact %s: no ArtifactGenerator in the tree declares it", key)
	}
	aliases := map[string]string{} // alias to its artifact's directory
	sources, _ := gen["spec"].(map[string]any)["sources"].([]any)
	for _, s := range sources {
		sm, _ := s.(map[string]any)
		if str(sm, "kind") == "GitRepository" {
			sns := str(sm, "namespace")
			if sns == "" {
				sns = ns
			}
			repo := b.gitRepository(sns, str(sm, "name"), p)
			if ok, _ := b.git.this(sns, str(sm, "name"), repo, false); ok {
				dir, err := b.git.dir(repo)
				if err != nil {
					return "", fmt.Errorf("ExternalArtifact %s: source @%s, GitRepository %s/%s: %w", key, str(sm, "alias"), sns, str(sm, "name"), err)
				}
				aliases[str(sm, "alias")] = dir
			}
		}
	}
	dst, err := os.MkdirTemp(b.opts.Work, "artifact-")
	if err != nil {
		return "", err
	}
	copies, _ := art["copy"].([]any)
	for _, c := range copies {
		cm, _ := c.(map[string]any)
		from, to := str(cm, "from"), str(cm, "to")
		alias, pattern, _ := strings.Cut(strings.TrimPrefix(from, "@"), "/")
		src, ok := aliases[alias]
		if !ok {
			return "", fmt.Errorf("ExternalArtifact %s: copy from %q: source @%s is not this repository at the revision previewed", key, from, alias)
		}
		dest := strings.TrimPrefix(strings.TrimPrefix(to, "@artifact"), "/")
		if err := copyMatching(src, pattern, filepath.Join(dst, filepath.FromSlash(dest)), strings.HasSuffix(to, "/") || dest == ""); err != nil {
			return "", fmt.Errorf("ExternalArtifact %s: copy from %q to %q: %w", key, from, to, err)
		}
	}
	if b.artifacts == nil {
		b.artifacts = map[string]string{}
	}
	b.artifacts[key] = dst
	return dst, nil
}

// generator finds the ArtifactGenerator in namespace ns that declares the artifact name, in the
// objects applied so far or in the files.
func (b *builder) generator(ns, name string, p *pool) (map[string]any, map[string]any) {
	find := func(obj map[string]any) map[string]any {
		spec, _ := obj["spec"].(map[string]any)
		arts, _ := spec["artifacts"].([]any)
		for _, a := range arts {
			if am, _ := a.(map[string]any); str(am, "name") == name {
				return am
			}
		}
		return nil
	}
	for k, o := range p.objects {
		if strings.HasPrefix(k, generatorGroup+"/ArtifactGenerator/"+ns+"/") {
			if a := find(o); a != nil {
				return o, a
			}
		}
	}
	for _, o := range b.files.objects {
		if o.group == generatorGroup && o.kind == "ArtifactGenerator" && (o.namespace == ns || o.namespace == "") {
			if a := find(o.obj); a != nil {
				return o.obj, a
			}
		}
	}
	return nil, nil
}

// copyMatching copies the files of src matching pattern ("apps/base/**", "deploy/*.yaml",
// "config/app.yaml") to dest: each under dest by its path below the pattern's fixed leading
// directories when intoDir, else (one file) as dest itself.
func copyMatching(src, pattern, dest string, intoDir bool) error {
	fixed := []string{}
	for _, seg := range strings.Split(pattern, "/") {
		if strings.ContainsAny(seg, "*?[") {
			break
		}
		fixed = append(fixed, seg)
	}
	glob := len(fixed) < len(strings.Split(pattern, "/"))
	base := strings.Join(fixed, "/")
	if !glob {
		base = path.Dir(pattern)
		if !intoDir {
			return copyFile(filepath.Join(src, filepath.FromSlash(pattern)), dest)
		}
	}
	re, err := globRegexp(pattern)
	if err != nil {
		return err
	}
	n := 0
	root := filepath.Join(src, filepath.FromSlash(base))
	err = filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, file)
		rel = filepath.ToSlash(rel)
		if !re.MatchString(rel) {
			return nil
		}
		below, _ := filepath.Rel(root, file)
		n++
		return copyFile(file, filepath.Join(dest, below))
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no file of the repository matches")
	}
	return nil
}

// globRegexp turns a copy rule's glob into a regexp: ** any path, * and ? within a segment.
func globRegexp(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '*' && i+1 < len(g) && g[i+1] == '*':
			b.WriteString(".*")
			i++
			if i+1 < len(g) && g[i+1] == '/' {
				i++
				b.WriteString("/?")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// namespaced says whether objects of the kind live in a namespace (a kind nobody knows is
// taken to: custom resources mostly are).
func namespaced(group, kind string) bool {
	av := "v1"
	if group != "" {
		av = group + "/v1"
	}
	return manifest.BuiltinScope(av, kind) != manifest.ClusterScoped
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}
