package fluxtree

import (
	"path"
	"sort"
	"strings"
)

// appliesItself says whether the Kustomization obj, written in file (relative to the root; ""
// when a build produced it), applies that file itself: its spec.path holds it, as flux
// bootstrap writes the Kustomization of a cluster. Its source is then this repository.
func appliesItself(obj map[string]any, file string) bool {
	if file == "" {
		return false
	}
	spec, _ := obj["spec"].(map[string]any)
	p := cleanRel(str(spec, "path"))
	return p == "." || strings.HasPrefix(file, p+"/")
}

// roots are the Kustomizations a walk starts from: each bootstrap Kustomization (its path
// holds its own file: it applies itself, as flux bootstrap writes it); without one, every
// Kustomization of the files.
func (b *builder) roots() []ksRef {
	var all, boot []ksRef
	for _, o := range b.files.objects {
		if o.group != kustomizeGroup || o.kind != "Kustomization" || o.name == "" {
			// One with no name is no root: the build that reads its file says what is wrong.
			continue
		}
		ns := o.namespace
		if ns == "" {
			ns = "default"
		}
		k := ksRef{obj: o.obj, namespace: ns, name: o.name, file: o.file}
		all = append(all, k)
		if appliesItself(o.obj, o.file) {
			boot = append(boot, k)
		}
	}
	if len(boot) > 0 {
		return boot
	}
	// No bootstrap Kustomization (flux bootstrap writes it; a repository may leave
	// gotk-sync.yaml for it to write, and the Flux Operator's FluxInstance makes it in the
	// cluster): each directory holding Kustomizations that no Kustomization of another
	// directory applies is the path a bootstrap would be given, the outermost of nested ones.
	dirs := map[string]bool{}
	for _, k := range all {
		dirs[path.Dir(k.file)] = true
	}
	roots := unapplied(dirs, all, b.readsThis)
	var out []ksRef
	for d := range roots {
		outer := true
		for e := range roots {
			if e != d && under(d, e) {
				outer = false
			}
		}
		if outer {
			out = append(out, ksRef{obj: map[string]any{"apiVersion": kustomizeGroup + "/v1", "kind": "Kustomization",
				"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
				"spec":     map[string]any{"path": d}}, namespace: "flux-system", name: "flux-system", file: d + "/(bootstrap)"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].file < out[j].file })
	return out
}

// unapplied are the directories of dirs that no Kustomization of all written in another
// directory applies (its spec.path holds them, and its source is this repository, as
// readsThis says): a Kustomization under ./apps that one of ./clusters/production applies is
// built there, in that one's context, not as a root of its own. When every directory is
// applied by another (a cycle), all of them are.
func unapplied(dirs map[string]bool, all []ksRef, readsThis func(ksRef) bool) map[string]bool {
	out := map[string]bool{}
	for d := range dirs {
		applied := false
		for _, k := range all {
			spec, _ := k.obj["spec"].(map[string]any)
			if p, ok := spec["path"].(string); ok && path.Dir(k.file) != d && under(d, cleanRel(p)) && readsThis(k) {
				applied = true
				break
			}
		}
		if !applied {
			out[d] = true
		}
	}
	if len(out) == 0 {
		return dirs
	}
	return out
}

// readsThis says whether the Kustomization k, as its file holds it, reads this repository's
// files: its source a GitRepository that is this repository (see gitSources.this), or an
// ExternalArtifact (which an ArtifactGenerator may make from them).
func (b *builder) readsThis(k ksRef) bool {
	spec, _ := k.obj["spec"].(map[string]any)
	ref, _ := spec["sourceRef"].(map[string]any)
	ns := str(ref, "namespace")
	if ns == "" {
		ns = k.namespace
	}
	switch str(ref, "kind") {
	case "GitRepository":
		ok, _ := b.git.this(ns, str(ref, "name"), b.files.find(sourceGroup, "GitRepository", ns, str(ref, "name")), false)
		return ok
	case "ExternalArtifact":
		return true
	}
	return false
}

// under says whether the directory d (relative to the root) is dir or below it.
func under(d, dir string) bool {
	return dir == "." || d == dir || strings.HasPrefix(d, dir+"/")
}
