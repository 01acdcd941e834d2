// Package fluxtree reads a Flux repository as Flux would apply it, with no cluster: it finds
// the Kustomizations of a tree (kustomize.toolkit.fluxcd.io), builds each one as
// kustomize-controller builds it (fluxcd/pkg/kustomize: overlays, patches, components,
// generators, targetNamespace, postBuild substitutions, commonMetadata), follows the
// Kustomizations each build holds, and returns the HelmReleases they apply with the objects
// beside them (sources, values ConfigMaps and Secrets) that their render reads. It renders
// nothing: diff tree renders what it returns.
package fluxtree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/kubeapis"
	"github.com/helm-drift/helm-drift/internal/objcache"
	"github.com/helm-drift/helm-drift/internal/sops"
)

// Options say how a tree is read.
type Options struct {
	// Paths are the directories (relative to the root) whose files are searched for
	// Kustomizations and HelmReleases; empty: the whole tree.
	Paths []string
	// Sources name the GitRepositories ("namespace/name") that are this repository, beside
	// the bootstrap one (a Kustomization whose path holds its own file) and those whose URL
	// is RemoteURL.
	Sources []string
	// RemoteURL is the repository's URL (its git remote), to know its GitRepository by.
	RemoteURL string
	// Revision is the commit the tree is ("" when unknown: a directory outside Git): a chart
	// of this repository with reconcileStrategy Revision carries it in its version.
	Revision string
	// Vars are substitution variables from outside the repository (a ConfigMap of the
	// cluster, say): a Kustomization's substituteFrom that the tree does not hold reads them.
	Vars map[string]string
	// Outside, when set, is the cluster (diff tree --live): a substituteFrom ConfigMap or
	// Secret the tree does not hold is read there, as kustomize-controller reads it (before
	// Vars). Its values are used, never printed.
	Outside helmcontroller.Getter
	// SOPS are age identities: the SOPS-encrypted objects a Kustomization with
	// spec.decryption.provider sops builds are decrypted with them, as kustomize-controller
	// decrypts them with its decryption keys. None: they stay encrypted (never decrypted).
	SOPS sops.Identities
	// Cluster, when set, is the tree the cluster was last reconciled from (the base of a
	// preview): an object this tree applies is read as the cluster will hold it, Cluster's copy
	// where a marker keeps kustomize-controller from applying it (labelled or annotated
	// kustomize.toolkit.fluxcd.io/reconcile: disabled or ssa: Ignore, here or in the cluster;
	// ssa: IfNotPresent here, when the cluster holds it), and none where the cluster holds
	// none. Nil: every object is taken to be applied as written.
	Cluster *Tree
	// NoRemoteBases refuses a kustomization's remote bases (git URLs), as kustomize-controller
	// run with --no-remote-bases does; by default they are cloned, as it does by default.
	NoRemoteBases bool
	// Builds, when set, keeps kustomize's builds between runs: of each file of a Kustomization
	// of plain files, by its content (see cachedMake), and of the other Kustomizations whole,
	// with the trace of what they read (see tracedbuilds.go). A run then rebuilds only what
	// reads a file that changed.
	Builds *objcache.Cache
	// Work is a directory for the ExternalArtifacts made from the tree by their
	// ArtifactGenerators' copy rules, and for the GitRepositories' artifacts when their ignore
	// rules leave files out; the caller removes it once done with the Tree ("": the system's
	// temporary directory, where nothing removes them). The builds write nothing, there or in
	// the tree.
	Work string
}

// Tree is what Flux would apply from a repository.
type Tree struct {
	// Root is the directory read.
	Root string
	// Revision is the commit it is (Options.Revision).
	Revision string
	// HelmReleases are the HelmReleases found, sorted by Key.
	HelmReleases []*HelmRelease
	// Problems are what could not be read or built; each names its file or object.
	Problems []Problem
	// Skipped are Kustomizations not built because their source is not this repository.
	Skipped []string
	// Decrypted are the SOPS-encrypted objects decrypted with Options.SOPS ("Secret
	// apps/creds (Kustomization flux-system/apps)").
	Decrypted []string
	// Unserved are the objects of Flux's groups in an API version its current controllers no
	// longer serve ("HelmRelease apps/web (Kustomization flux-system/apps) is
	// helm.toolkit.fluxcd.io/v2beta1, ...").
	Unserved []string
	// Unsubstituted are the SOPS-encrypted substituteFrom Secrets this run could not decrypt,
	// whose variables are left as written ("${NAME}"), one note each.
	Unsubstituted []string
	// Marked says an object applied, or its copy in Options.Cluster, carries a marker that can
	// keep kustomize-controller from applying it: without Options.Cluster, the tree may say
	// otherwise than the cluster will hold.
	Marked bool
	// NotApplied are the objects that marker kept as the cluster holds them although the tree
	// says otherwise (with Options.Cluster), one note each.
	NotApplied []string
	// Unexpanded are the Flux Operator ResourceSets whose objects cannot be built offline
	// (their inputs come from the cluster), by "ResourceSet namespace/name (Kustomization
	// ...)": why, and a digest of the ResourceSet as applied and the providers beside it, to
	// tell whether a change touched them.
	Unexpanded map[string]Unexpanded
	git        *gitSources
	// contexts are the objects each context (a root Kustomization's path) applies; failed,
	// the Kustomizations whose build failed, by context and namespace/name.
	contexts map[string]map[string]map[string]any
	failed   map[string]bool
}

// Applies says whether the context applies the object group/kind namespace/name (a
// ResourceSet, say).
func (t *Tree) Applies(context, group, kind, namespace, name string) bool {
	return t.contexts[context][objectKey(group, kind, namespace, name)] != nil
}

// BuildFailed says whether the context's Kustomization namespace/name could not be built (a
// Problem names it): kustomize-controller then applies, and prunes, nothing of it.
func (t *Tree) BuildFailed(context, namespace, name string) bool {
	return t.failed[context+"\x00"+namespace+"/"+name]
}

// Kustomization is the Kustomization namespace/name as the context applies it (after its
// parent's build and substitutions), nil when the context does not apply it.
func (t *Tree) Kustomization(context, namespace, name string) map[string]any {
	return t.contexts[context][objectKey(kustomizeGroup, "Kustomization", namespace, name)]
}

// APIVersions are the API versions the CustomResourceDefinitions the context applies serve,
// as Helm's capabilities list those the cluster serves ("group/version" and
// "group/version/Kind"), sorted: a chart that asks .Capabilities.APIVersions for one sees it,
// as it does in the cluster once they are applied. The CRDs a chart installs are not among them:
// the render of that chart offers them (see helmcontroller.Build).
func (t *Tree) APIVersions(context string) []string {
	set := map[string]bool{}
	for k, o := range t.contexts[context] {
		if strings.HasPrefix(k, "apiextensions.k8s.io/CustomResourceDefinition/") {
			for _, v := range kubeapis.CRDServes(o) {
				set[v] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// GitRepository gives the directory a chart of the GitRepository ns/name (as h's context
// applies it, or else as the files hold it) is read from: this repository's files as
// source-controller archives them for it, and the revision read (Options.Revision); or an
// error saying why it is not this repository at the revision read (another URL, another
// branch, a tag).
func (t *Tree) GitRepository(h *HelmRelease, ns, name string) (dir, revision string, err error) {
	repo, ok := h.Objects[objectKey(sourceGroup, "GitRepository", ns, name)]
	if !ok {
		repo = t.git.files.find(sourceGroup, "GitRepository", ns, name)
	}
	if ok, why := t.git.this(ns, name, repo, false); !ok {
		return "", "", fmt.Errorf("GitRepository %s/%s is not the revision previewed: %s (pass --source %s/%s if it is)", ns, name, why, ns, name)
	}
	if dir, err = t.git.dir(repo); err != nil {
		return "", "", fmt.Errorf("GitRepository %s/%s: %w", ns, name, err)
	}
	return dir, t.Revision, nil
}

// Unexpanded is a ResourceSet whose objects cannot be built offline.
type Unexpanded struct {
	// Why says what only the cluster answers.
	Why string
	// Digest is a digest of the ResourceSet as applied and the providers beside it.
	Digest string
}

// unexpanded records the ResourceSet named id as not built offline; inputs are what makes its
// objects, as far as the tree holds them (digested, to tell a change).
func (t *Tree) unexpanded(id string, inputs any, why string) {
	if t.Unexpanded == nil {
		t.Unexpanded = map[string]Unexpanded{}
	}
	data, _ := json.Marshal(inputs)
	sum := sha256.Sum256(data)
	t.Unexpanded[id] = Unexpanded{Why: why, Digest: hex.EncodeToString(sum[:])}
}

// problemOnce records p, unless the same problem is already recorded (a Kustomization built
// again once its variables are known says it again).
func (t *Tree) problemOnce(p Problem) {
	for _, q := range t.Problems {
		if q.Error() == p.Error() {
			return
		}
	}
	t.Problems = append(t.Problems, p)
}

// Problem is a file that could not be read or a Kustomization that could not be built.
type Problem struct {
	// Where names the file ("apps/web.yaml") or the Kustomization ("Kustomization
	// flux-system/apps (clusters/production)").
	Where string
	Err   error
}

func (p Problem) Error() string { return p.Where + ": " + p.Err.Error() }

// HelmRelease is one HelmRelease as Flux would apply it.
type HelmRelease struct {
	// Object is the HelmRelease after its Kustomization's build and substitutions.
	Object map[string]any
	// Namespace and Name are the HelmRelease's.
	Namespace, Name string
	// Context is the cluster it belongs to: the path of the root Kustomization that led to
	// it ("clusters/production"), or "" for a HelmRelease of a plain file.
	Context string
	// Via is the chain of Kustomizations that applied it ("flux-system/flux-system >
	// flux-system/apps"), empty for a plain file.
	Via []string
	// File is the file the HelmRelease's document came from, relative to the root, when
	// known ("" when a build generated it).
	File string
	// Get answers its render's reads (valuesFrom, chart sources) from the objects of its
	// context: what the same Kustomizations apply.
	Get helmcontroller.Getter
	// Objects are the objects of its context, by "group/kind/namespace/name", as applied:
	// its sources and values come from here.
	Objects map[string]map[string]any
	// Vars are the substitution variables its text refers to, by name, for telling a change's
	// cause; SecretVars are the values of its Kustomization's variables that came from
	// Secrets (all of them, referred to or not), never shown.
	Vars              map[string]Var
	SecretVars        []string
	kustomizationVars map[string]Var
	// Encrypted names the SOPS-encrypted Secrets and ConfigMaps of its context
	// ("Kind/namespace/name"), which its render cannot read; EncryptedObjects holds them as
	// written (encrypted), to tell whether one changed without decrypting it.
	Encrypted        map[string]bool
	EncryptedObjects map[string]map[string]any
}

// Var is one substitution variable: where it came from ("inline", "ConfigMap
// flux-system/vars", "Secret flux-system/vars", "--substitute") and a digest of its value (to
// tell a change without holding a Secret's value).
type Var struct {
	From, Digest string
	// Sealed: its value was not read (a SOPS-encrypted Secret's, no key given); it was
	// substituted by "${NAME}", and Digest is that of its ciphertext.
	Sealed bool
}

// Key identifies a HelmRelease across two trees: its context and namespace/name.
func (h *HelmRelease) Key() string {
	k := h.Namespace + "/" + h.Name
	if h.Context != "" {
		k = h.Context + ": " + k
	}
	return k
}

// Load reads the tree at root.
func Load(ctx context.Context, root string, o Options) (*Tree, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	ignored := gitIgnored(root)
	if root, err = kustomizableRoot(root, o.Work, ignored); err != nil {
		return nil, err
	}
	t := &Tree{Root: root, Revision: o.Revision}
	scan, err := scanFiles(root, o.Paths, ignored)
	if err != nil {
		return nil, err
	}
	t.git = newGitSources(root, o, scan)
	t.git.ignored = ignored
	b := &builder{root: root, opts: o, tree: t, files: scan, git: t.git}
	roots := b.roots()
	if len(roots) == 0 {
		// A file that does not parse matters here; under Kustomizations, only if a build
		// reads it (its error then names it), as Flux ignores files no Kustomization reads.
		scan.readPending()
		t.Problems = append(t.Problems, scan.problems...)
		b.plain()
	} else {
		for _, r := range roots {
			b.walk(ctx, r)
		}
	}
	sort.Slice(t.HelmReleases, func(i, j int) bool { return t.HelmReleases[i].Key() < t.HelmReleases[j].Key() })
	sort.Slice(t.Problems, func(i, j int) bool { return t.Problems[i].Where < t.Problems[j].Where })
	sort.Strings(t.Skipped)
	sort.Strings(t.Decrypted)
	sort.Strings(t.Unserved)
	sort.Strings(t.Unsubstituted)
	sort.Strings(t.NotApplied)
	return t, nil
}

// varsOf are the substitution variables of the HelmRelease of key (HelmRelease.Key) in t, nil
// when t holds none.
func (t *Tree) varsOf(key string) map[string]Var {
	for _, h := range t.HelmReleases {
		if h.Key() == key {
			return h.Vars
		}
	}
	return nil
}

// objectKey is how the objects of a context are kept: "group/kind/namespace/name".
func objectKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// groupOf is the API group of an apiVersion.
func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// cleanRel cleans a Kustomization's spec.path ("./clusters/production/") to a path relative
// to its source's root ("clusters/production"; "." for the root).
func cleanRel(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}
