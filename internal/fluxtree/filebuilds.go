package fluxtree

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/objcache"
)

// A Kustomization whose path holds plain files and no kustomization file is built by Flux's
// generator as a kustomization listing every YAML file under the path, which kustomize then
// builds. Such a build is the sum of the builds of its files, one at a time: nothing of one file
// reaches the objects of another, save that no two may be the same object; and their order is
// the files' (the generator lists them as its walk meets them, and kustomize, run with Flux's
// options, does not reorder them). cachedMake builds it so, each file's build kept in
// Options.Builds by the file's content, so that a run rebuilds only the files that changed since
// a run before (a pull request's): 200 files of HelmReleases took 50 ms of CPU to scan and build
// as one, and take 5 ms from the cache. It declines (nil) whatever it is not sure to build
// alike, which is then built whole:
//   - a spec field the generator writes into the kustomization (targetNamespace, namePrefix,
//     patches, images, components, ...), or decryption, which reads the objects as kustomize
//     returns them: only the fields known to leave the build alone are allowed (postBuild among
//     them: its variables are substituted in the objects after, from the cache as from a build);
//   - a kustomization file in the path or below it, a symbolic link, anything else that is
//     neither a directory nor a regular file;
//   - a file whose own build fails, and two files holding the same object: the whole build
//     then says so, in its own words.
//
// xref: fluxcd/pkg/kustomize kustomize_generator.go findOrGenerateKustomization, scanManifests;
// kustomize api krusty/kustomizer.go Run, applySortOrder (no reordering under Flux's options).

// splitSpec are the Kustomization spec fields that leave a generated kustomization as the
// files make it (the generator reads none of them; kustomize-controller applies them after the
// build, as postBuild and commonMetadata, or they say when and how to apply).
var splitSpec = map[string]bool{
	"sourceRef": true, "path": true, "interval": true, "retryInterval": true, "timeout": true,
	"prune": true, "wait": true, "force": true, "suspend": true, "dependsOn": true,
	"serviceAccountName": true, "kubeConfig": true, "healthChecks": true, "healthCheckExprs": true,
	"commonMetadata": true, "deletionPolicy": true, "postBuild": true,
}

// buildVersion tells the builds of one version of kustomize and the Flux generator from
// another's in the cache: an entry is only read by the builder that wrote it. Its number is
// raised when what a kept build holds changes otherwise (how kustomize is run, what of its
// output is kept, the trace's questions).
var buildVersion = sync.OnceValue(func() []byte {
	v := "helm-drift file build 1"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "sigs.k8s.io/kustomize/api", "sigs.k8s.io/kustomize/kyaml", "github.com/fluxcd/pkg/kustomize":
				v += " " + d.Path + "@" + d.Version
			}
		}
	}
	return []byte(v)
})

// cachedMake builds the Kustomization at dir (spec.path rel of source src) file by file, from
// the cache where it can; nil when it declines (see above).
func (b *builder) cachedMake(spec map[string]any, src, dir, rel string) *made {
	if b.opts.Builds == nil || b.opts.Builds.Dir == "" {
		return nil
	}
	for k := range spec {
		if !splitSpec[k] {
			return nil
		}
	}
	files, ok := generatedResources(dir)
	if !ok || len(files) == 0 {
		return nil
	}
	var objs []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil
		}
		key := objcache.Key(buildVersion(), []byte(f), data)
		got, ok := b.opts.Builds.Get(key)
		if !ok {
			if got, ok = b.buildFile(src, dir, f); !ok {
				return nil
			}
			b.opts.Builds.Put(key, got)
		}
		objs = append(objs, got...)
	}
	buildMu.Lock()
	ok = distinct(objs)
	buildMu.Unlock()
	if !ok {
		return nil
	}
	return &made{objs: objs, rel: rel, decrypted: make([]bool, len(objs))}
}

// generatedResources are the files the Flux generator lists in the kustomization it makes for
// dir ("./apps/web.yaml", in its order), and false when it would list anything else or dir
// holds what cachedMake declines.
func generatedResources(dir string) ([]string, bool) {
	var files []string
	ok := true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			ok = false
		case d.IsDir():
			for _, k := range kustomizationFiles {
				if _, err := os.Lstat(filepath.Join(p, k)); err == nil {
					ok = false
				}
			}
		case !d.Type().IsRegular():
			ok = false
		default:
			if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
				files = append(files, "./"+filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator))))
			}
		}
		if !ok {
			return filepath.SkipAll
		}
		return nil
	})
	return files, ok && err == nil
}

// buildFile builds the one file f of dir as the generated kustomization of dir builds it (the
// same build, listing f only), its objects as maps; false when it fails.
func (b *builder) buildFile(src, dir, f string) ([]map[string]any, bool) {
	manifest, err := sigsyaml.Marshal(kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{f},
	})
	if err != nil {
		return nil, false
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	// A generated kustomization sets no schema of its own: the build need not parse the builtin
	// one first (20 ms of CPU), which a build of plain files seldom reads.
	res, err := kustomizeRun(src, dir, filepath.Join(dir, "kustomization.yaml"), manifest, nil, !b.opts.NoRemoteBases, nil)
	if err != nil {
		return nil, false
	}
	out, err := objectsOf(res)
	return out, err == nil
}

// distinct reports whether no two of the objects of a generated kustomization's files are the
// same object, as kustomize tells them apart when it adds each file's objects to the build (it
// refuses the build otherwise): the identity is kustomize's own (resid: group, version, kind,
// name, and effective namespace: "" is "default", and none for a kind its schema knows to be
// cluster-scoped: the builtin kinds, which kyaml knows without its schema, and no others). The
// caller holds buildMu: the schema is kyaml's global state, which a build may change.
// xref: kustomize api resmap/reswrangler.go Append; kyaml resid/resid.go Equals.
func distinct(objs []map[string]any) bool {
	seen := make(map[[5]string]bool, len(objs))
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		g, v := resid.ParseGroupVersion(str(o, "apiVersion"))
		id := resid.NewResIdWithNamespace(resid.NewGvk(g, v, str(o, "kind")), str(meta, "name"), str(meta, "namespace"))
		k := [5]string{id.Group, id.Version, id.Kind, id.Name, id.EffectiveNamespace()}
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}
