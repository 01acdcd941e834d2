package action

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	v2 "github.com/fluxcd/helm-controller/api/v2"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
)

// render renders h as helm-controller would, with no cluster (but for the HelmChart of its
// spec.chart under --live); prev is the same HelmRelease at the base when h is the head's.
func (d *DiffTree) render(ctx context.Context, h, prev *fluxtree.HelmRelease, t *fluxtree.Tree, shared *helmcontroller.Artifacts, how renderHow) (*treeSide, error) {
	hr, err := helmcontroller.Decode(h.Object)
	if err != nil {
		return nil, err
	}
	for _, v := range hr.Spec.ValuesFrom {
		if h.Encrypted[v.Kind+"/"+hr.Namespace+"/"+v.Name] {
			return nil, fmt.Errorf("valuesFrom %s %s/%s is SOPS-encrypted: diff tree decrypts it only with its key (--sops-age-key-file or --sops-pgp-key-file) and a Kustomization whose spec.decryption.provider is sops", v.Kind, hr.Namespace, v.Name)
		}
	}
	get, co := d.chartOptions(hr, h, prev, t, shared)
	// The cluster serves the API versions of the CRDs its tree applies, besides those given.
	apis := append(slices.Clone(d.APIVersions), t.APIVersions(h.Context)...)
	bo := helmcontroller.BuildOptions{Get: get, Charts: co, KubeVersion: d.KubeVersion, APIVersions: apis, Rerender: how.rerender}
	if prev != nil && !how.install {
		// helm-controller upgrades the base's release, unless the head's is another one
		// (installed afresh; diff tree shows its next reconcile as a reinstall).
		if base, err := helmcontroller.Decode(prev.Object); err == nil && helmcontroller.IdentityOf(base) == helmcontroller.IdentityOf(hr) {
			bo.Upgrade, bo.Upgrades = true, how.upgrades
		}
	}
	var src helmcontroller.Source
	if chartOf := how.chartOf; chartOf != nil {
		// The chart another side's HelmRelease reads (the base's: source-controller's
		// artifact of that version), loaded afresh: a render may prune its dependencies.
		chr, err := helmcontroller.Decode(chartOf.h.Object)
		if err != nil {
			return nil, err
		}
		_, cco := d.chartOptions(chr, chartOf.h, nil, chartOf.t, shared)
		if bo.Chart, src, err = helmcontroller.LoadChart(ctx, chr, cco); err != nil {
			return nil, err
		}
		src.From += "; source-controller keeps serving the chart it packaged for this version"
	}
	b, err := helmcontroller.Build(ctx, hr, bo)
	if err != nil {
		return nil, err
	}
	if how.chartOf != nil {
		b.Source = src
	}
	side := &treeSide{hr: hr, built: b}
	if side.objs, err = objectsOf(b.CRDs + "\n" + b.Manifest); err != nil {
		return nil, err
	}
	if b.Rerender != "" {
		if side.again, err = objectsOf(b.CRDs + "\n" + b.Rerender); err != nil {
			return nil, err
		}
	}
	return side, nil
}

// treeSideLoad is one side of a preview, as read: its checkout and its tree.
type treeSideLoad struct {
	flag, name string
	rev        string
	c          *Checkout
	t          *fluxtree.Tree
	problems   []string
	err        error
}

// load reads the side's tree from its checkout with the options o (their Work, RemoteURL and
// Revision its own), over cluster when set (fluxtree.Options.Cluster).
func (s *treeSideLoad) load(ctx context.Context, o fluxtree.Options, work string, cluster *fluxtree.Tree) error {
	o.Work, o.RemoteURL, o.Revision, o.Cluster = work, s.c.RemoteURL, s.c.Commit, cluster
	t, err := fluxtree.Load(ctx, s.c.Dir, o)
	if err != nil {
		return &InputError{Err: fmt.Errorf("%s (%s): %w", s.name, s.c.Name, err)}
	}
	s.problems = nil
	for _, p := range t.Problems {
		s.problems = append(s.problems, s.name+": "+p.Error())
	}
	s.t = t
	return nil
}

// capabilityNotes collects, over a run's renders, the API versions the charts ask
// .Capabilities.APIVersions for that their renders did not offer (helmcontroller.UnservedAsks),
// by chart version.
type capabilityNotes struct {
	// kubeVersion is the renders' --kube-version.
	kubeVersion string
	mu          sync.Mutex
	by          map[capabilityAsk][]string // the HelmReleases
}

// capabilityAsk is a chart version ("name version") and what it asks for that is not offered.
type capabilityAsk struct{ chart, asks string }

// add records what the chart of s, the head's render of HelmRelease hr, asks for and s did not
// offer.
func (c *capabilityNotes) add(hr string, s *treeSide) {
	if s == nil {
		return
	}
	asks := helmcontroller.UnservedAsks(s.built.Chart, c.kubeVersion, s.built.Offered)
	if len(asks) == 0 {
		return
	}
	md := s.built.Chart.Metadata
	key := capabilityAsk{md.Name + " " + md.Version, strings.Join(asks, ", ")}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[capabilityAsk][]string{}
	}
	if !slices.Contains(c.by[key], hr) {
		c.by[key] = append(c.by[key], hr)
	}
}

// notes are one note per chart version and its asks, naming its HelmReleases (five, then a
// count) and the flag that offers them.
func (c *capabilityNotes) notes() []string {
	keys := slices.SortedFunc(maps.Keys(c.by), func(a, b capabilityAsk) int {
		return strings.Compare(a.chart+": "+a.asks, b.chart+": "+b.asks)
	})
	var out []string
	for _, key := range keys {
		hrs := slices.Sorted(slices.Values(c.by[key]))
		who := "HelmRelease " + hrs[0]
		if len(hrs) > 1 {
			who = "HelmReleases " + limitList(hrs, 5)
		}
		out = append(out, fmt.Sprintf("%s: chart %s asks .Capabilities.APIVersions for %s, which neither Kubernetes, --api-versions, the CRDs the tree applies nor the chart's crds/ serve: rendered as on a cluster that does not; if yours does (CRDs installed another way), pass --api-versions %s",
			who, key.chart, key.asks, strings.ReplaceAll(key.asks, ", ", " --api-versions ")))
	}
	return out
}

// preservesValues says whether h upgrades with spec.upgrade.preserveValues.
func preservesValues(h *fluxtree.HelmRelease) bool {
	if h == nil {
		return false
	}
	hr, err := helmcontroller.Decode(h.Object)
	return err == nil && hr.GetUpgrade().PreserveValues
}

// renderHow says how render renders one side of a HelmRelease.
type renderHow struct {
	// rerender renders the side twice (unstable fields).
	rerender bool
	// chartOf, when set, is the HelmRelease whose chart is rendered instead of its own.
	chartOf *treeChart
	// upgrades is the base's render, which the head's upgrades with upgrade.preserveValues.
	upgrades *helmcontroller.Rendered
	// install: helm-controller installs the head afresh although the release's name,
	// namespace and storage stay (its chart renamed under chartNameChangeStrategy Reinstall).
	install bool
}

// treeChart names the HelmRelease (and its tree) whose chart a render reads instead of its own.
type treeChart struct {
	h *fluxtree.HelmRelease
	t *fluxtree.Tree
}

// chartOptions are how the render of hr (h of tree t; prev the base's, for the head) reads its
// chart and sources: from its tree's objects, the HelmChart helm-controller makes as the base's
// made it (or the cluster's, with --live), this repository's GitRepositories from t.
func (d *DiffTree) chartOptions(hr *v2.HelmRelease, h, prev *fluxtree.HelmRelease, t *fluxtree.Tree, shared *helmcontroller.Artifacts) (helmcontroller.Getter, helmcontroller.ChartOptions) {
	get := helmcontroller.Getter(h.Get)
	if hr.HasChartTemplate() {
		get = &helmChartGetter{Getter: h.Get, namespace: hr.Spec.Chart.GetNamespace(hr.Namespace), name: hr.GetHelmChartName(),
			live: d.Live, base: baseHelmChart(prev)}
	}
	co := d.Charts
	co.Get, co.FromSpec, co.Artifacts = get, true, shared
	co.GitRepository = func(ns, name string) (string, string, error) {
		return t.GitRepository(h, ns, name)
	}
	return get, co
}

// unservedNotes are the notes of objects in versions Flux no longer serves: one each, or past
// five, one for all of them, naming the first five (a repository that never moved off
// v2beta1 would otherwise fill a pull request's comment with them).
func unservedNotes(unserved []string) []string {
	if len(unserved) <= 5 {
		return unserved
	}
	var first []string
	for _, u := range unserved[:5] {
		what, _, _ := strings.Cut(u, ", which ")
		first = append(first, what)
	}
	return []string{fmt.Sprintf("%d objects are in API versions Flux's current controllers no longer serve (applying them fails there; move them to helm.toolkit.fluxcd.io/v2, kustomize.toolkit.fluxcd.io/v1, source.toolkit.fluxcd.io/v1): %s, and %d more",
		len(unserved), strings.Join(first, "; "), len(unserved)-5)}
}
