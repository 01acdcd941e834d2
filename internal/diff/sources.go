package diff

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/flux"
)

// source is the data of one ConfigMap or Secret an envFrom names; ok is false when it does
// not exist.
type source struct {
	data map[string]string
	ok   bool
}

// shadowRows finds inline env entries that hide envFrom keys, reading the ConfigMaps and
// Secrets they name (values are compared here and never leave), and says what the upgrade to
// desired does to each: a shadow of the live workload is kept while the new render still
// states the inline entry, or while the entry is not the chart's (added out of band), and
// removed when the new render drops an entry the last release stated; a shadow only the new
// render has is one the upgrade introduces. prev is the last release's object where it differs
// from desired (nil: none, or the same as desired).
func (m *measure) shadowRows(ctx context.Context, kind string, cluster, desired, prev map[string]any, namespace string) ([]Row, error) {
	path := compare.PodSpecPath(kind)
	if path == nil {
		return nil, nil
	}
	var readErr error
	read := func(k, name string) (map[string]string, bool) {
		s, err := m.sources.Get(k+"/"+namespace+"/"+name, func() (source, error) { return m.source(ctx, k, namespace, name) })
		if err != nil && readErr == nil {
			readErr = err
		}
		return s.data, s.ok
	}
	find := func(obj map[string]any) map[string]compare.Shadow {
		out := map[string]compare.Shadow{}
		if podSpec := podSpecOf(obj, path); podSpec != nil {
			for _, sh := range compare.FindShadows(podSpec, strings.Join(path, "."), read) {
				out[sh.Path] = sh
			}
		}
		return out
	}
	live, next := find(cluster), find(desired)
	last := next // the last release's object is the desired one unless prev says otherwise
	if prev != nil {
		last = find(prev)
	}
	row := func(sh compare.Shadow, resolved bool, why string) Row {
		r := Row{Class: compare.Shadows, Path: sh.Path, From: sh.From, Redacted: sh.Secret, Resolved: resolved, Why: why}
		if sh.Known {
			agree := sh.Agree
			r.Agree = &agree
		}
		return r
	}
	var rows []Row
	for _, sh := range live {
		_, stated := next[sh.Path]
		_, wasStated := last[sh.Path]
		switch {
		case stated:
			rows = append(rows, row(sh, false, "kept: the new render still states the inline entry"))
		case wasStated:
			rows = append(rows, row(sh, true, "removed: the new render drops the inline entry, so the envFrom value applies"))
		default:
			rows = append(rows, row(sh, false, "kept: the inline entry is not the chart's (added out of band)"))
		}
	}
	for p, sh := range next {
		if _, ok := live[p]; !ok {
			rows = append(rows, row(sh, false, "introduced: the new render adds an inline entry that hides the envFrom key"))
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	return rows, readErr
}

// podSpecOf is the pod spec at path in obj; nil where there is none.
func podSpecOf(obj map[string]any, path []string) map[string]any {
	var cur any = obj
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	podSpec, _ := cur.(map[string]any)
	return podSpec
}

// source reads a ConfigMap's or Secret's data: from the release's LIST of that kind when there
// is one, else with a GET.
func (m *measure) source(ctx context.Context, kind, namespace, name string) (source, error) {
	var o map[string]any
	if l, listed := m.lists[listKey{"", "v1", kind, namespace}]; listed {
		// The release has objects of this kind here: the LIST already read them all.
		if o = l.byName[name]; o == nil {
			return source{}, nil
		}
	} else {
		var err error
		o, err = m.cl.Get(ctx, "", "v1", kind, namespace, name)
		if apierrors.IsNotFound(err) {
			return source{}, nil
		}
		if err != nil {
			return source{}, m.explain(fmt.Errorf("%s %s/%s: %w", kind, namespace, name, err), "get", "", "v1", kind, namespace)
		}
	}
	s := source{data: map[string]string{}, ok: true}
	raw, _ := o["data"].(map[string]any)
	for key, v := range raw {
		str, _ := v.(string)
		if kind == "Secret" {
			b, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				continue
			}
			str = string(b)
		}
		s.data[key] = str
	}
	return s, nil
}

// helmReleaseIgnore returns the spec.driftDetection.ignore rules of the Flux HelmRelease that
// manages the release, found through the helm.toolkit.fluxcd.io labels on its live objects;
// none when no HelmRelease does.
func helmReleaseIgnore(ctx context.Context, cl Cluster, liveObjs []map[string]any) ([]flux.IgnoreRule, string, error) {
	for _, o := range liveObjs {
		md, _ := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		name, _ := labels["helm.toolkit.fluxcd.io/name"].(string)
		ns, _ := labels["helm.toolkit.fluxcd.io/namespace"].(string)
		if name == "" || ns == "" {
			continue
		}
		hr, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, ns, name)
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("HelmRelease %s/%s: %w", ns, name, err)
		}
		spec, _ := hr["spec"].(map[string]any)
		dd, _ := spec["driftDetection"].(map[string]any)
		rules, err := flux.IgnoreRules(dd["ignore"])
		if err != nil {
			return nil, "", fmt.Errorf("HelmRelease %s/%s: %w", ns, name, err)
		}
		return rules, ns + "/" + name, nil
	}
	return nil, "", nil
}
