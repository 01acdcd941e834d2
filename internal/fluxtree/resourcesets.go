package fluxtree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/helm-drift/helm-drift/internal/resourceset"
)

// expandResourceSets adds to objs, for each Flux Operator ResourceSet among them, the objects
// the operator builds from it and applies (see package resourceset): the HelmReleases,
// sources and Kustomizations of an application defined once for many input sets; where names
// what applies the ResourceSets, for the notes and problems. The
// ResourceSet is read as kustomize-controller applied it (its variables substituted); what
// it makes is not substituted again. One whose inputs only the cluster gives is kept in
// Tree.Unexpanded; one the operator would fail to build is a problem of its own, the rest of
// the Kustomization applied.
func (b *builder) expandResourceSets(ctx context.Context, objs []built, where string) []built {
	out := objs
	for _, o := range objs {
		if o.group != resourceset.Group || o.kind != resourceset.Kind {
			continue
		}
		id := "ResourceSet " + o.namespace + "/" + o.name + " (" + where + ")"
		made, err := b.buildResourceSet(ctx, o, objs)
		var u *resourceset.Unexpanded
		switch {
		case errors.As(err, &u):
			// What makes its objects: the ResourceSet, and the providers beside it (a change
			// to one is a change to what it makes).
			inputs := []any{o.obj}
			for _, p := range objs {
				if p.group == resourceset.Group && p.kind == "ResourceSetInputProvider" && p.namespace == o.namespace {
					inputs = append(inputs, p.obj)
				}
			}
			b.tree.unexpanded(id, inputs, u.Why)
			continue
		case err != nil:
			b.tree.problemOnce(Problem{Where: id, Err: err})
			continue
		}
		for _, m := range made {
			out = append(out, builtOf(m, o.file))
		}
	}
	return out
}

// buildResourceSet builds the ResourceSet o: with the cluster's providers under --live; else
// with the Static providers among objs (the same Kustomization's). A Static provider exports
// its spec.defaultValues and an id the cluster derives from the object's UID, which no file
// holds: the ResourceSet is built twice, with two made-up ids, and one whose objects the id
// changes is not built offline.
func (b *builder) buildResourceSet(ctx context.Context, o built, objs []built) ([]map[string]any, error) {
	if p := b.providers(ctx); p != nil {
		return resourceset.Build(o.obj, p)
	}
	used := false
	first, err := resourceset.Build(o.obj, staticProviders(objs, "1000000001", &used))
	if err != nil || !used {
		return first, err
	}
	second, err := resourceset.Build(o.obj, staticProviders(objs, "1000000002", &used))
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(first, second) {
		return nil, &resourceset.Unexpanded{Why: "its templates use the id of a Static ResourceSetInputProvider, which the cluster derives from the object's UID (--live reads it)"}
	}
	return first, nil
}

// staticProviders answers, with no cluster, the inputs of the Static
// ResourceSetInputProviders among objs: their spec.defaultValues, with id as their id; *used
// is set once one is asked for. Another type's inputs, or a provider objs lacks, only the
// cluster answers; so do label selectors (providers elsewhere may match).
func staticProviders(objs []built, id string, used *bool) *resourceset.Providers {
	return &resourceset.Providers{Inputs: func(namespace, name string) ([]map[string]any, error) {
		for _, o := range objs {
			if o.group != resourceset.Group || o.kind != "ResourceSetInputProvider" || o.namespace != namespace || o.name != name {
				continue
			}
			spec, _ := o.obj["spec"].(map[string]any)
			if t := str(spec, "type"); t != "Static" {
				return nil, fmt.Errorf("type %s: its inputs only the cluster answers (--live reads them)", t)
			}
			*used = true
			data, err := json.Marshal([]any{spec["defaultValues"]})
			if err != nil {
				return nil, err
			}
			sets, err := resourceset.DecodeInputs(data)
			if err != nil {
				return nil, fmt.Errorf("spec.defaultValues: %w", err)
			}
			sets[0]["id"] = id
			return sets, nil
		}
		return nil, errors.New("not among the objects its Kustomization applies: only the cluster answers (--live reads it)")
	}}
}

// providers reads what ResourceSetInputProviders export (their status, which only the
// cluster holds) from Options.Outside (diff tree --live): each input set a copy decoded as the
// operator decodes it, and, when the cluster lists objects, the providers a label selector
// selects. Nil without the cluster.
func (b *builder) providers(ctx context.Context) *resourceset.Providers {
	if b.opts.Outside == nil {
		return nil
	}
	p := &resourceset.Providers{Inputs: func(namespace, name string) ([]map[string]any, error) {
		o, err := b.opts.Outside.Get(ctx, resourceset.Group, "v1", "ResourceSetInputProvider", namespace, name)
		if err != nil {
			return nil, err
		}
		status, _ := o["status"].(map[string]any)
		data, err := json.Marshal(status["exportedInputs"])
		if err != nil {
			return nil, err
		}
		sets, err := resourceset.DecodeInputs(data)
		if err != nil {
			return nil, fmt.Errorf("status.exportedInputs: %w", err)
		}
		return sets, nil
	}}
	if l, ok := b.opts.Outside.(lister); ok {
		p.Select = func(namespace string, selector labels.Selector) ([]string, error) {
			items, err := l.ListObjects(ctx, resourceset.Group, "v1", "ResourceSetInputProvider", namespace)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, it := range items {
				u := unstructured.Unstructured{Object: it}
				if selector.Matches(labels.Set(u.GetLabels())) {
					names = append(names, u.GetName())
				}
			}
			return names, nil
		}
	}
	return p
}

// lister is a cluster that lists the objects of a kind in a namespace (internal/live's).
type lister interface {
	ListObjects(ctx context.Context, group, version, kind, namespace string) ([]map[string]any, error)
}
