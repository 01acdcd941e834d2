package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/objcache"
)

// DiffTree is "diff tree": every HelmRelease of a Flux repository rendered at two revisions,
// as helm-controller will render it, and compared field by field, with no cluster.
type DiffTree struct {
	// Repo is the repository's directory (the working tree); Base and Head are revisions or
	// directories (Head "": the working tree).
	Repo, Base, Head string
	// Tree says how each revision's tree is read (paths, this repository's sources, variables
	// from outside it).
	Tree fluxtree.Options
	// All renders every HelmRelease, not only those whose inputs changed.
	All bool
	// KubeVersion and APIVersions are the capabilities of the renders (helm template's).
	KubeVersion string
	APIVersions []string
	// Charts say where charts come from: mirrors, the disk cache, plain HTTP.
	Charts helmcontroller.ChartOptions
	// Cache, when set, is the directory runs keep the revisions they extract in
	// ("revisions", see OpenRevision), and kustomize's builds ("files", see
	// fluxtree.Options.Builds): a run after reads them from there.
	Cache string
	// Views keeps each object's two sides for the line views; CountUnstable counts as
	// changes the fields two renders of the same inputs disagree on.
	Views, CountUnstable bool
	// Workers renders this many HelmReleases at a time (default 2).
	Workers int
	// Live, when set, is the cluster as a third side (--live): each row says what it holds.
	Live helmcontroller.Getter
}

// TreeResult is a tree diff: a row per HelmRelease that changes or could not be rendered,
// and what was not compared.
type TreeResult struct {
	Summary
	// Base and Head name the two sides.
	Base, Head string
	// Unchanged counts the HelmReleases whose inputs are the same on both sides (not rendered
	// without All; rendered once, at the head, with it).
	Unchanged int
	// Problems are the files and Kustomizations of either side that could not be read or
	// built ("head: apps/x.yaml: ...").
	Problems []string
	// Notes are what was not compared, and the SOPS-encrypted Secrets that changed.
	Notes []string
}

// Run reads both sides and compares them.
func (d *DiffTree) Run(ctx context.Context) (*TreeResult, error) {
	if d.Cache == "" {
		// Every Kustomization is built whole, with kustomize's schema: it loads while git
		// extracts the revisions. With the cache, a warm run seldom builds one whole.
		go fluxtree.Prepare()
	}
	work, err := scratchDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	var revisions string
	if d.Cache != "" {
		revisions = filepath.Join(d.Cache, "revisions")
		d.Tree.Builds = &objcache.Cache{Dir: filepath.Join(d.Cache, "files")}
	}
	// Both sides at once, each read as soon as it is extracted (a working tree at once, a
	// revision once git archive has written it out or read from the cache); kustomize's
	// builds take turns.
	sides := [2]*treeSideLoad{{flag: "--base", name: "base", rev: d.Base}, {flag: "--head", name: "head", rev: d.Head}}
	var lw sync.WaitGroup
	for _, s := range sides {
		lw.Go(func() {
			if s.c, s.err = OpenRevision(d.Repo, s.rev, work, revisions); s.err != nil {
				s.err = fmt.Errorf("%s: %w", s.flag, s.err)
				return
			}
			s.err = s.load(ctx, d.Tree, work, nil)
		})
	}
	lw.Wait()
	for _, s := range sides {
		if s.c != nil {
			defer s.c.Close()
		}
	}
	for _, s := range sides {
		if s.err != nil {
			return nil, s.err
		}
	}
	if sides[0].t.Marked || sides[1].t.Marked {
		// An object marked to be left as the cluster holds it: the head is read again over
		// the base, as kustomize-controller applies it over what the base made.
		if err := sides[1].load(ctx, d.Tree, work, sides[0].t); err != nil {
			return nil, err
		}
	}
	bt, ht := sides[0].t, sides[1].t
	res := &TreeResult{Base: sides[0].c.Name, Head: sides[1].c.Name}
	res.Notes = append(res.Notes, ht.NotApplied...)
	res.Problems = append(sides[0].problems, sides[1].problems...)
	res.Notes = append(res.Notes, ht.Skipped...)
	res.Notes = append(res.Notes, unservedNotes(ht.Unserved)...)
	for _, d := range ht.Decrypted {
		res.Notes = append(res.Notes, d+": SOPS-encrypted, decrypted with the keys given")
	}
	seen := map[string]bool{}
	for _, n := range append(append([]string{}, ht.Unsubstituted...), bt.Unsubstituted...) {
		if !seen[n] {
			seen[n] = true
			res.Notes = append(res.Notes, n)
		}
	}
	notes, unmeasured := unexpandedNotes(bt, ht)
	res.Notes, res.Unmeasured = append(res.Notes, notes...), append(res.Unmeasured, unmeasured...)
	pairs := pairTrees(bt, ht)
	var todo []treePair
	for _, p := range pairs {
		if p.base != nil && p.head == nil {
			p.kept = kept(p.base, bt, ht)
		}
		if n := moveNote(p, bt, ht); n != "" {
			res.Notes = append(res.Notes, n)
		}
		if p.base != nil && p.head != nil {
			bl, hl := localChart(p.base, bt), localChart(p.head, ht)
			p.chartFiles = bl != hl
			p.same = fingerprint(p.base, bl) == fingerprint(p.head, hl)
		}
		if p.same {
			// The same inputs render the same: --all renders the head once, to show it renders.
			res.Unchanged++
			if !d.All {
				continue
			}
		}
		todo = append(todo, p)
	}
	res.Notes = append(res.Notes, encryptedChanges(pairs)...)
	if d.Live == nil {
		res.Notes = append(res.Notes, generationNotes(todo)...)
	} else {
		res.Notes = append(res.Notes, remoteNotes(todo)...)
	}
	res.Rows = make([]diff.SummaryRow, len(todo))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, d.Workers))
	shared := &helmcontroller.Artifacts{}
	asks := &capabilityNotes{kubeVersion: d.KubeVersion}
	for i, p := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res.Rows[i] = d.compare(ctx, p, bt, ht, shared, asks)
		})
	}
	wg.Wait()
	res.Notes = append(res.Notes, asks.notes()...)
	res.Unmeasured = append(res.Unmeasured, sealedChanges(todo)...)
	for _, r := range res.Rows {
		if r.Report == nil {
			continue
		}
		for _, o := range r.Report.Objects {
			if o.Error != "" {
				res.Unmeasured = append(res.Unmeasured, fmt.Sprintf("HelmRelease %s: %s: %s", r.HelmRelease, o.Object, o.Error))
			}
		}
	}
	return res, nil
}

// unexpandedNotes are, for the Flux Operator ResourceSets whose objects cannot be built
// offline, a note for each the change leaves as it is, and as not measured each it changes
// (or that only one side could build): its HelmReleases are unknown on one side at least,
// never shown as unchanged.
func unexpandedNotes(base, head *fluxtree.Tree) (notes, unmeasured []string) {
	ids := slices.Sorted(maps.Keys(head.Unexpanded))
	for id := range base.Unexpanded {
		if _, ok := head.Unexpanded[id]; !ok {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		b, inBase := base.Unexpanded[id]
		h, inHead := head.Unexpanded[id]
		switch {
		case inBase && inHead && b.Digest == h.Digest:
			notes = append(notes, id+": its objects are not built offline ("+h.Why+"); the change leaves it as it is")
		case inHead:
			unmeasured = append(unmeasured, id+": changed, and its objects cannot be built offline: "+h.Why)
		default:
			unmeasured = append(unmeasured, id+": its objects at the base cannot be built offline: "+b.Why)
		}
	}
	return notes, unmeasured
}

// treePair is one HelmRelease on either side (nil where that side lacks it).
type treePair struct {
	key        string
	base, head *fluxtree.HelmRelease
	// same: the inputs are the same on both sides (rendered once, under --all); chartFiles:
	// the files of a chart the trees hold differ (localChart).
	same, chartFiles bool
	// kept says why a HelmRelease the head no longer applies stays in the cluster (see kept).
	kept string
}

// pairTrees pairs the HelmReleases of two trees by their key, in key order.
func pairTrees(base, head *fluxtree.Tree) []treePair {
	byKey := map[string]*treePair{}
	var keys []string
	get := func(k string) *treePair {
		p, ok := byKey[k]
		if !ok {
			p = &treePair{key: k}
			byKey[k] = p
			keys = append(keys, k)
		}
		return p
	}
	for _, h := range base.HelmReleases {
		get(h.Key()).base = h
	}
	for _, h := range head.HelmReleases {
		get(h.Key()).head = h
	}
	sort.Strings(keys)
	out := make([]treePair, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

// fingerprint digests what a HelmRelease's render reads: the HelmRelease, its valuesFrom
// objects and its chart's source object as its tree applies them, and local, the digest of a
// chart the tree itself holds (localChart). Equal fingerprints render the same (a chart version
// range may resolve to a new version on either side alike).
func fingerprint(h *fluxtree.HelmRelease, local string) string {
	parts := []any{h.Object, local}
	spec, _ := h.Object["spec"].(map[string]any)
	ns := h.Namespace
	for _, ref := range inputsOf(spec, ns) {
		// An encrypted input counts as written: a change to it is a change of inputs (the render
		// then names it as unreadable), not a HelmRelease left unchanged.
		parts = append(parts, ref, h.Objects[ref], encryptedObject(h, strings.SplitN(ref, "/", 2)[1]))
	}
	// A variable substituted as written (its SOPS-encrypted Secret not decrypted) counts by its
	// ciphertext: its text is the same whatever its value.
	for _, n := range slices.Sorted(maps.Keys(h.Vars)) {
		if h.Vars[n].Sealed {
			parts = append(parts, n, h.Vars[n].Digest)
		}
	}
	data, _ := json.Marshal(parts)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// inputsOf are the object keys ("group/kind/namespace/name") a HelmRelease's render reads:
// its valuesFrom and its chart's source.
func inputsOf(spec map[string]any, ns string) []string {
	var out []string
	key := func(group, kind, namespace, name string) string {
		if namespace == "" {
			namespace = ns
		}
		return group + "/" + kind + "/" + namespace + "/" + name
	}
	vf, _ := spec["valuesFrom"].([]any)
	for _, v := range vf {
		m, _ := v.(map[string]any)
		out = append(out, key("", str(m, "kind"), "", str(m, "name")))
	}
	if ref, ok := spec["chartRef"].(map[string]any); ok {
		out = append(out, key(flux.SourceGroup, str(ref, "kind"), str(ref, "namespace"), str(ref, "name")))
	}
	if c, ok := spec["chart"].(map[string]any); ok {
		cs, _ := c["spec"].(map[string]any)
		ref, _ := cs["sourceRef"].(map[string]any)
		out = append(out, key(flux.SourceGroup, str(ref, "kind"), str(ref, "namespace"), str(ref, "name")))
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// encryptedChanges says, for each SOPS-encrypted Secret of either side, whether it changed
// (its encrypted content), never decrypting it.
func encryptedChanges(pairs []treePair) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pairs {
		if p.base == nil || p.head == nil {
			continue
		}
		for id := range p.head.Encrypted {
			k := p.head.Context + ":" + id
			if seen[k] {
				continue
			}
			seen[k] = true
			kind, nsName, _ := strings.Cut(id, "/")
			b, h := encryptedObject(p.base, id), encryptedObject(p.head, id)
			state := "unchanged"
			if !equality.Semantic.DeepEqual(b, h) {
				state = "changed"
			}
			out = append(out, fmt.Sprintf("%s %s (SOPS-encrypted, not decrypted): encrypted: %s", kind, nsName, state))
		}
	}
	sort.Strings(out)
	return out
}

// sealedChanges name, for each HelmRelease compared, the substitution variables its text
// refers to on both sides that come, at the head, from a SOPS-encrypted Secret this run could
// not decrypt, and whose ciphertext (or source) changed: its render substituted them as written ("${NAME}") on both sides, so
// the rows cannot show what their new values change.
func sealedChanges(todo []treePair) []string {
	var out []string
	for _, p := range todo {
		if p.base == nil || p.head == nil {
			continue
		}
		var names []string
		var from string
		for _, n := range slices.Sorted(maps.Keys(p.head.Vars)) {
			// One the base did not refer to shows as written in the rows.
			if v, bv := p.head.Vars[n], p.base.Vars[n]; v.Sealed && bv != (fluxtree.Var{}) && v != bv {
				names, from = append(names, "${"+n+"}"), v.From
			}
		}
		if len(names) > 0 {
			out = append(out, fmt.Sprintf("HelmRelease %s: %s (%s) changed: its new value is not substituted without the key, so the rows show only the rest of the change; pass --sops-age-key-file or --sops-pgp-key-file to see it",
				p.head.Namespace+"/"+p.head.Name, limitList(names, 8), from))
		}
	}
	return out
}

// encryptedObject is the encrypted Secret or ConfigMap id ("Kind/namespace/name") as the tree
// holds it (fluxtree keeps it out of the objects a render reads), from the HelmRelease's
// context; nil when there is none.
func encryptedObject(h *fluxtree.HelmRelease, id string) any {
	if h.EncryptedObjects == nil {
		return nil
	}
	return h.EncryptedObjects[id]
}

// compare renders one HelmRelease on each side and compares the two renders.
func (d *DiffTree) compare(ctx context.Context, p treePair, bt, ht *fluxtree.Tree, shared *helmcontroller.Artifacts, asks *capabilityNotes) diff.SummaryRow {
	h := p.head
	if h == nil {
		h = p.base
	}
	row := diff.SummaryRow{HelmRelease: h.Namespace + "/" + h.Name, Context: h.Context, Release: "?", Namespace: "?", Next: "?"}
	// The two sides render at once: a pull request's preview of one HelmRelease waits for
	// the slower render, not for both. With upgrade.preserveValues the head's values are
	// the base's release's too: it renders after the base.
	var sides [2]*treeSide
	var errs [2]error
	var rw sync.WaitGroup
	reuse := !p.same && p.base != nil && preservesValues(p.head)
	for i, s := range []struct {
		hr, prev *fluxtree.HelmRelease // prev: the base's, for the head
		tree     *fluxtree.Tree
	}{{p.base, nil, bt}, {p.head, p.base, ht}} {
		if s.hr == nil || p.same && i == 0 {
			continue
		}
		if i == 1 && reuse {
			rw.Wait()
			if errs[0] == nil {
				sides[1], errs[1] = d.render(ctx, s.hr, s.prev, s.tree, shared, renderHow{rerender: true, upgrades: sides[0].built.Rendered})
			}
			continue
		}
		rw.Go(func() {
			sides[i], errs[i] = d.render(ctx, s.hr, s.prev, s.tree, shared, renderHow{rerender: i == 1 && !p.same})
		})
	}
	rw.Wait()
	install := false
	if errs[0] == nil && errs[1] == nil && sides[0] != nil && sides[1] != nil && !p.same &&
		sides[0].built.Identity == sides[1].built.Identity && targetChange(sides[0], sides[1]) != "" {
		// helm-controller installs the release afresh (its chart renamed under
		// chartNameChangeStrategy Reinstall): spec.install's settings, no values reused.
		install, reuse = true, false
		sides[1], errs[1] = d.render(ctx, p.head, p.base, ht, shared, renderHow{rerender: true, install: true})
	}
	for i, name := range []string{"base", "head"} {
		if errs[i] != nil {
			row.Error = fmt.Sprintf("not rendered (%s): %v", name, errs[i])
			return row
		}
	}
	if p.same {
		sides[0] = sides[1]
	}
	chartFiles := p.chartFiles
	if chartFiles && staleChart(sides[0], sides[1]) {
		// source-controller keeps serving the base's chart: the head renders with it.
		var upgrades *helmcontroller.Rendered
		if reuse {
			upgrades = sides[0].built.Rendered
		}
		again, err := d.render(ctx, p.head, p.base, ht, shared, renderHow{rerender: !p.same, chartOf: &treeChart{h: p.base, t: bt}, upgrades: upgrades, install: install})
		if err != nil {
			row.Error = fmt.Sprintf("not rendered (head, with the base's chart): %v", err)
			return row
		}
		sides[1] = again
	}
	asks.add(row.HelmRelease, sides[1])
	rep, err := compareTreeSides(sides[0], sides[1], d.Views, d.CountUnstable)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	rep.HelmRelease, rep.Sides = row.HelmRelease, [2]string{"base", "head"}
	rep.Causes = causes(p, sides[0], sides[1])
	if chartFiles && sides[0].built.Chart.Metadata.Version == sides[1].built.Chart.Metadata.Version {
		rep.Causes = append(rep.Causes, fmt.Sprintf("the chart's files in this repository (%s) under the same version %s: not deployed until it changes (source-controller keeps serving the chart it packaged)", chartPathOf(p.head), sides[1].built.Chart.Metadata.Version))
	}
	rep.Next = nextOf(p, sides[0], sides[1], chartFiles)
	if rep.Next.Action == flux.NextNothing || p.kept != "" {
		markNotApplied(rep)
	}
	if p.kept != "" {
		rep.Prune = nil // the release stays, and so do its objects
	}
	if d.Live != nil && sides[1] != nil && sides[1].hr.Spec.KubeConfig == nil {
		// One installed in another cluster (spec.kubeConfig) is not compared with this one.
		var baseObjs []manifest.Object
		if sides[0] != nil {
			baseObjs = sides[0].objs
		}
		markLive(ctx, rep, sides[1].objs, baseObjs, sides[1].built.Namespace, d.Live)
	}
	redactSecretValues(rep, append(secretValues(p.base), secretValues(p.head)...))
	out := diff.Summarise(rep)
	out.Context, out.Report = h.Context, rep
	return out
}

// treeSide is one side's render of a HelmRelease.
type treeSide struct {
	hr    *v2.HelmRelease
	built *helmcontroller.Built
	objs  []manifest.Object
	// again are the objects of a second render of the same inputs (head only).
	again []manifest.Object
}

// objectsOf reads a manifest's objects.
func objectsOf(m string) ([]manifest.Object, error) {
	st, err := manifest.Split([]byte(m))
	if err != nil {
		return nil, err
	}
	return manifest.Objects(st)
}

// compareTreeSides compares the base render with the head render (either may be absent: a
// HelmRelease added or removed), marks the rows the head's second render disagrees on as
// unstable, and the CRD changes helm-controller will not apply.
func compareTreeSides(base, head *treeSide, views, countUnstable bool) (*diff.Report, error) {
	var bo, ho []manifest.Object
	s := head
	if s == nil {
		s = base
	}
	if base != nil {
		bo = base.objs
	}
	if head != nil {
		ho = head.objs
	}
	o := diff.SetOptions{Release: s.built.Name, Namespace: s.built.Namespace, Views: views}
	if base != nil {
		o.BaseNamespace = base.built.Namespace
	}
	rep, err := diff.CompareSets(bo, ho, o)
	if err != nil {
		return nil, err
	}
	if head != nil && head.again != nil {
		again, err := diff.CompareSets(head.objs, head.again, diff.SetOptions{Release: o.Release, Namespace: o.Namespace, NoRefusals: true})
		if err == nil {
			markUnstable(rep, again, countUnstable)
		}
	}
	if base != nil && head != nil {
		markCRDs(rep, helmcontroller.CRDPolicy(head.hr, &release4.Release{}))
	}
	rep.Engine = "helm-controller's render (the Helm 4 SDK " + ModuleVersion("helm.sh/helm/v4") + ", its post-renderers), no cluster: lookup answered as empty"
	var src []string
	if base != nil {
		src = append(src, "base: "+base.built.Source.String())
	}
	if head != nil {
		src = append(src, "head: "+head.built.Source.String())
	}
	rep.Source = strings.Join(src, "; ")
	return rep, nil
}
