package fluxtree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/objcache"
)

// The Flux kinds the tree is read by.
const (
	kustomizeGroup = "kustomize.toolkit.fluxcd.io"
	sourceGroup    = "source.toolkit.fluxcd.io"
	generatorGroup = "source.extensions.fluxcd.io"
	helmGroup      = "helm.toolkit.fluxcd.io"
)

// ksRef is a Flux Kustomization met in the tree.
type ksRef struct {
	obj             map[string]any
	namespace, name string
	file            string // the raw file it was written in ("" when a build produced it)
	via             []string
	// outside: its substituteFrom objects no Kustomization of its context applies may be read
	// from the cluster (Options.Outside): set once the others have been built.
	outside bool
}

func (k ksRef) id() string { return k.namespace + "/" + k.name }

// where names the Kustomization for a problem.
func (k ksRef) where(context string) string {
	w := "Kustomization " + k.id()
	if k.file != "" {
		w += " (" + k.file + ")"
	} else if context != "" {
		w += " (" + context + ")"
	}
	return w
}

// builder reads one tree.
type builder struct {
	root  string
	opts  Options
	tree  *Tree
	files *scanned
	git   *gitSources
	// artifacts are the directories of the ExternalArtifacts made so far in this context, by
	// namespace/name (the repository's own files are read where they are: builds write
	// nothing to them).
	artifacts map[string]string
	// made are the builds of the walk's Kustomizations, by namespace/name (see make).
	made map[string]*made
}

// pool is the objects one context applies.
type pool struct {
	// context is the root Kustomization's path (see HelmRelease.Context).
	context string
	objects map[string]map[string]any
	vars    map[string]string
	// encrypted names the Secrets and ConfigMaps kept aside as SOPS-encrypted
	// ("Kind/namespace/name"); sealed holds them as written.
	encrypted map[string]bool
	sealed    map[string]map[string]any
	// refs are the substitution variables each substituted ConfigMap and Secret refers to,
	// by objectKey (see refer).
	refs map[string]map[string]Var
}

func (p *pool) add(o map[string]any) string {
	meta, _ := o["metadata"].(map[string]any)
	k := objectKey(groupOf(str(o, "apiVersion")), str(o, "kind"), str(meta, "namespace"), str(meta, "name"))
	p.objects[k] = o
	return k
}

// walk builds the Kustomization r and every Kustomization its builds hold, in one context.
func (b *builder) walk(ctx context.Context, r ksRef) {
	spec, _ := r.obj["spec"].(map[string]any)
	context := cleanRel(str(spec, "path"))
	b.artifacts = nil // an ExternalArtifact's name is a context's own
	b.made = nil
	p := &pool{context: context, objects: map[string]map[string]any{}, vars: map[string]string{}, encrypted: map[string]bool{}}
	var hrs []*HelmRelease
	seen := map[string]bool{}
	queue := []ksRef{r}
	var deferred []ksRef
	retried := map[string]bool{}
	for len(queue) > 0 || len(deferred) > 0 {
		if len(queue) == 0 {
			queue, deferred = deferred, nil
		}
		k := queue[0]
		queue = queue[1:]
		if seen[k.id()] {
			continue
		}
		objs, vars, err := b.build(ctx, k, p, context)
		var missing *missingVars
		if errors.As(err, &missing) && !retried[k.id()] {
			// Its substituteFrom names an object another Kustomization of the context may
			// apply: built again once the others are.
			retried[k.id()] = true
			k.outside = true
			deferred = append(deferred, k)
			continue
		}
		seen[k.id()] = true
		if err != nil {
			b.tree.Problems = append(b.tree.Problems, Problem{Where: k.where(context), Err: err})
			if b.tree.failed == nil {
				b.tree.failed = map[string]bool{}
			}
			b.tree.failed[context+"\x00"+k.id()] = true
			continue
		}
		via := append(append([]string{}, k.via...), k.id())
		for _, o := range objs {
			var kept bool
			if o.obj, kept = b.applied(context, k.id(), o.obj); o.obj == nil {
				continue // never applied, and not in the cluster
			}
			b.served(o.obj, o.group, o.kind, o.namespace, o.name, "Kustomization "+k.id())
			key := p.add(o.obj)
			group, kind := o.group, o.kind
			if o.vars != nil && group == "" && (kind == "ConfigMap" || kind == "Secret") {
				p.refer(key, varsOf(o.vars, vars))
			}
			switch {
			case group == kustomizeGroup && kind == "Kustomization":
				child := ksRef{obj: o.obj, namespace: o.namespace, name: o.name, via: via}
				if !seen[child.id()] {
					queue = append(queue, child)
				}
			case group == helmGroup && kind == "HelmRelease":
				h := &HelmRelease{Object: o.obj, Namespace: o.namespace, Name: o.name, Context: context, Via: via, File: o.file,
					Vars: varsOf(o.vars, vars), kustomizationVars: vars}
				if kept {
					h.Vars = b.opts.Cluster.varsOf(h.Key()) // the cluster's copy, substituted as it was
				}
				hrs = append(hrs, h)
			case o.decrypted:
				b.tree.Decrypted = append(b.tree.Decrypted, fmt.Sprintf("%s %s/%s (Kustomization %s)", kind, o.namespace, o.name, k.id()))
			case group == "" && ((kind == "Secret" || kind == "ConfigMap") && isSOPS(o.obj) || o.sealed):
				id := kind + "/" + o.namespace + "/" + o.name
				p.encrypted[id] = true
				if p.sealed == nil {
					p.sealed = map[string]map[string]any{}
				}
				p.sealed[id] = o.obj
				delete(p.objects, key)
			}
		}
	}
	b.finish(p, hrs)
	if b.tree.contexts == nil {
		b.tree.contexts = map[string]map[string]map[string]any{}
	}
	b.tree.contexts[context] = p.objects
}

// finish gives the HelmReleases of a context its objects.
func (b *builder) finish(p *pool, hrs []*HelmRelease) {
	get := &helmcontroller.StreamFirst{NoCluster: "is not applied by the tree (diff tree reads no cluster): add it to the tree, or make the reference optional"}
	for k, o := range p.objects {
		o := o
		parts := strings.SplitN(k, "/", 4)
		get.Add(parts[0], parts[1], parts[2], parts[3], func() (map[string]any, error) { return o, nil })
	}
	for _, h := range hrs {
		h.Get, h.Objects, h.Encrypted, h.EncryptedObjects = get, p.objects, p.encrypted, p.sealed
		p.valuesFromVars(h)
		// Every value from a Secret of its Kustomization is withheld, not only those it refers
		// to: a value is hidden wherever it shows.
		for name, v := range h.kustomizationVars {
			if strings.HasPrefix(v.From, "Secret ") {
				h.SecretVars = append(h.SecretVars, p.vars[name])
			}
		}
		b.tree.HelmReleases = append(b.tree.HelmReleases, h)
	}
}

// buildMu makes builds take turns (see build).
var buildMu sync.Mutex

// missingVars: a Kustomization's substituteFrom names an object not (yet) applied.
type missingVars struct{ ref string }

func (e *missingVars) Error() string {
	return "postBuild.substituteFrom " + e.ref + " is not in the tree: add it, make it optional, or pass its variables with --substitute"
}

// built is one object a build produced.
type built struct {
	obj                          map[string]any
	group, kind, namespace, name string
	file                         string
	// decrypted: it was SOPS-encrypted, and decrypted with Options.SOPS; sealed: a Secret
	// whose values sops encrypted, not decrypted.
	decrypted, sealed bool
	// vars are the substitution variables the text of a HelmRelease, ConfigMap or Secret
	// refers to (nil for other kinds, and when it is not substituted).
	vars map[string]bool
}

// build builds one Kustomization as kustomize-controller does: its source's files at
// spec.path, with the kustomization.yaml the Flux generator makes from its spec (in memory), then each
// object decrypted, its variables substituted and commonMetadata set. It returns the objects
// and the substitution variables used (name to origin).
// xref: kustomize-controller internal/controller/kustomization_controller.go build.
func (b *builder) build(ctx context.Context, k ksRef, p *pool, context string) ([]built, map[string]Var, error) {
	spec, _ := k.obj["spec"].(map[string]any)
	m, err := b.make(ctx, k, p)
	if err != nil || m == nil {
		return nil, nil, err
	}
	// kustomize's builds share global state (its OpenAPI schema, see kustomizeBuild), which
	// the kind lookups below read too: one build at a time, across trees read at once.
	buildMu.Lock()
	defer buildMu.Unlock()
	vars, origins, digests, err := b.vars(ctx, k, p, m)
	if err != nil {
		return nil, nil, err
	}
	used := map[string]Var{}
	for n, v := range vars {
		d, sealed := digests[n]
		if !sealed {
			sum := sha256.Sum256([]byte(v))
			d = hex.EncodeToString(sum[:8])
		}
		used[n] = Var{From: origins[n], Digest: d, Sealed: sealed}
	}
	withVars := (&unstructured.Unstructured{Object: k.obj}).DeepCopy()
	if len(vars) > 0 {
		sv := map[string]any{}
		for n, v := range vars {
			sv[n] = v
		}
		_ = unstructured.SetNestedMap(withVars.Object, sv, "spec", "postBuild", "substitute")
	}
	_, substituted := spec["postBuild"]
	var out []built
	for i := range m.decrypted {
		var obj map[string]any
		var refs map[string]bool
		file := ""
		if m.res == nil && !substituted {
			// From the build cache (cachedMake, tracedGet), nothing to substitute: the object
			// as kept.
			obj = objcache.Copy(m.objs[i])
			file = originFileOf(obj, m.rel)
		} else {
			r, err := m.resource(i)
			if err != nil {
				return nil, nil, err
			}
			refs = referencedVars(spec, r)
			if obj, err = b.substitute(ctx, withVars, spec, r); err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
			}
			file = originFile(r, m.rel)
		}
		setCommonMetadata(obj, spec)
		o := builtOf(obj, file)
		// A Secret of sops-encrypted values (a secretGenerator's sources) that
		// kustomize-controller would decrypt, and this run cannot: kept aside as encrypted.
		o.decrypted, o.vars = m.decrypted[i], refs
		o.sealed = !m.decrypted[i] && sopsDecryption(k) && encryptedValues(obj)
		out = append(out, o)
	}
	return b.expandResourceSets(ctx, out, k.where(context)), used, nil
}

// builtOf is an object as it is applied, from file: in the namespace "default" when it is
// namespaced and names none.
func builtOf(obj map[string]any, file string) built {
	meta, _ := obj["metadata"].(map[string]any)
	ns := str(meta, "namespace")
	if ns == "" && namespaced(groupOf(str(obj, "apiVersion")), str(obj, "kind")) {
		ns = "default"
		if meta != nil {
			meta["namespace"] = ns
		}
	}
	return built{obj: obj, group: groupOf(str(obj, "apiVersion")), kind: str(obj, "kind"), namespace: ns, name: str(meta, "name"), file: file}
}

// made is a Kustomization's kustomize build, its objects decrypted (as far as this run can):
// what its variables are then substituted in. rel is its spec.path, cleaned. The objects are
// res's, or, from the build cache (cachedMake, tracedGet), objs.
type made struct {
	res       resmap.ResMap
	objs      []map[string]any
	decrypted []bool
	rel       string
}

// resource is the i-th object as kustomize's resource, for the substitution of variables: res's,
// or, for an object from the build cache, one made from it afresh. Its text, which the
// substitution reads and rewrites, is the same either way: kustomize writes a resource's text
// from its fields as decoded (keys sorted), never from the file's own.
func (m *made) resource(i int) (*resource.Resource, error) {
	if m.res != nil {
		return m.res.Resources()[i], nil
	}
	return resourceFactory().FromMap(objcache.Copy(m.objs[i]))
}

// resourceFactory is kustomize's default factory of resources.
var resourceFactory = sync.OnceValue(func() *resource.Factory {
	return provider.NewDefaultDepProvider().GetResourceFactory()
})

// size is how many objects the build made.
func (m *made) size() int { return len(m.decrypted) }

// object is the i-th object as a map (afresh: the caller may change it).
func (m *made) object(i int) (map[string]any, error) {
	if m.res != nil {
		return m.res.Resources()[i].Map()
	}
	return objcache.Copy(m.objs[i]), nil
}

// make builds the Kustomization k with kustomize and decrypts its objects, once a walk: a
// Kustomization whose variables are not all applied yet is built again later (see walk), from
// the same files. It returns nil when k's source is not this repository.
func (b *builder) make(ctx context.Context, k ksRef, p *pool) (*made, error) {
	if m, ok := b.made[k.id()]; ok {
		return m, nil
	}
	spec, _ := k.obj["spec"].(map[string]any)
	src, err := b.source(ctx, k, p)
	if err != nil || src == "" {
		return nil, err
	}
	rel := cleanRel(str(spec, "path"))
	dir := filepath.Join(src, filepath.FromSlash(rel))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("spec.path %q does not exist in its source: fix the path", str(spec, "path"))
	}
	if m := b.cachedMake(spec, src, dir, rel); m != nil {
		return b.keep(k, m), nil
	}
	u := unstructured.Unstructured{Object: k.obj}
	manifest, kfile, action, err := kustomize.NewGenerator(src, u).GenerateManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize: %s", strings.ReplaceAll(err.Error(), src+string(filepath.Separator), ""))
	}
	decryptedSources, err := b.decryptSources(k, src, dir, manifest)
	if err != nil {
		return nil, err
	}
	// A build a run before made from the same answers (see tracedbuilds.go).
	var tr *fsTrace
	key := b.tracedKey(spec, src, kfile, manifest, action == kustomize.CreatedAction, decryptedSources)
	if key != "" {
		if objs, ok := b.tracedGet(key, src, kfile, manifest); ok {
			return b.keep(k, &made{objs: objs, rel: rel, decrypted: make([]bool, len(objs))}), nil
		}
		tr = &fsTrace{src: src}
	}
	// The generator above reads the files only, as kustomize-controller runs it, outside
	// the builds' lock.
	buildMu.Lock()
	defer buildMu.Unlock()
	res, err := kustomizeBuild(src, dir, kfile, manifest, decryptedSources, !b.opts.NoRemoteBases, tr)
	if err != nil {
		// Named by the repository's paths, not the directory's on this machine.
		return nil, fmt.Errorf("kustomize build %s: %s", rel, strings.ReplaceAll(err.Error(), src+string(filepath.Separator), ""))
	}
	// As kustomize-controller: each object decrypted after the build, before its variables
	// are read and substituted.
	m := &made{res: res, rel: rel, decrypted: make([]bool, res.Size())}
	for i, r := range res.Resources() {
		if m.decrypted[i], err = b.decrypt(k, r); err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
		}
	}
	if tr != nil && tr.spoil == "" {
		if objs, err := objectsOf(res); err == nil {
			b.tracedPut(key, tr, objs)
		}
	}
	return b.keep(k, m), nil
}

// keep records m as the build of k in this walk (see make), and returns it.
func (b *builder) keep(k ksRef, m *made) *made {
	if b.made == nil {
		b.made = map[string]*made{}
	}
	b.made[k.id()] = m
	return m
}

// objectsOf are a build's objects as maps, in its order.
func objectsOf(res resmap.ResMap) ([]map[string]any, error) {
	out := make([]map[string]any, 0, res.Size())
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// substitute runs the post-build variable substitution on one object (none when the
// Kustomization has no postBuild, or the object opts out, or it is SOPS-encrypted).
func (b *builder) substitute(ctx context.Context, withVars *unstructured.Unstructured, spec map[string]any, r *resource.Resource) (map[string]any, error) {
	if _, ok := spec["postBuild"]; ok {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		if !isSOPS(m) {
			out, err := kustomize.SubstituteVariables(ctx, nil, *withVars, r, kustomize.SubstituteWithDryRun(true))
			if err != nil {
				return nil, err
			}
			if out != nil {
				r = out
			}
		}
	}
	return r.Map()
}

// plain reads a tree with no Flux Kustomization: each kustomize directory no other one
// includes is built (with no Flux spec) as one context, and the HelmReleases of plain files
// outside them form the context "".
func (b *builder) plain() {
	inKustomize := func(file string) bool {
		for d := path.Dir(file); ; d = path.Dir(d) {
			if _, ok := b.files.kustomizeDirs[d]; ok {
				return true
			}
			if d == "." || d == "/" {
				return false
			}
		}
	}
	p := &pool{objects: map[string]map[string]any{}, vars: map[string]string{}, encrypted: map[string]bool{}}
	var hrs []*HelmRelease
	var objs []built
	for _, o := range b.files.objects {
		if !inKustomize(o.file) {
			objs = append(objs, built{obj: o.obj, group: o.group, kind: o.kind, namespace: o.namespace, name: o.name, file: o.file})
		}
	}
	for _, o := range b.expandResourceSets(context.Background(), objs, "the files outside Kustomizations") {
		ns := o.namespace
		if ns == "" {
			ns = "default"
		}
		b.served(o.obj, o.group, o.kind, ns, o.name, o.file)
		p.add(o.obj)
		if o.group == helmGroup && o.kind == "HelmRelease" {
			hrs = append(hrs, &HelmRelease{Object: o.obj, Namespace: ns, Name: o.name, File: o.file})
		}
	}
	b.finish(p, hrs)
	included := map[string]bool{}
	for _, refs := range b.files.kustomizeDirs {
		for _, r := range refs {
			included[r] = true
		}
	}
	var dirs []string
	for d := range b.files.kustomizeDirs {
		if !included[d] {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		k := ksRef{obj: map[string]any{"apiVersion": kustomizeGroup + "/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": d, "namespace": "default"},
			"spec":     map[string]any{"path": d}}, namespace: "default", name: d, file: d + "/kustomization.yaml"}
		b.walkPlain(k)
	}
}

// walkPlain builds one kustomize directory of a plain tree as its own context.
func (b *builder) walkPlain(k ksRef) {
	p := &pool{context: k.name, objects: map[string]map[string]any{}, vars: map[string]string{}, encrypted: map[string]bool{}}
	objs, _, err := b.build(context.Background(), k, p, k.name)
	if err != nil {
		b.tree.Problems = append(b.tree.Problems, Problem{Where: "kustomize directory " + k.name, Err: err})
		return
	}
	var hrs []*HelmRelease
	for _, o := range objs {
		p.add(o.obj)
		if o.group == helmGroup && o.kind == "HelmRelease" {
			hrs = append(hrs, &HelmRelease{Object: o.obj, Namespace: o.namespace, Name: o.name, Context: k.name, File: o.file})
		}
	}
	b.finish(p, hrs)
}
