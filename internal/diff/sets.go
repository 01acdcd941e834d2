package diff

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/helm-drift/helm-drift/internal/normalize/defaulting"
)

// SetOptions say how CompareSets compares.
type SetOptions struct {
	// Release and Namespace name what the sets render (the report's); Namespace is also the
	// namespace of the head's namespaced objects that state none, and BaseNamespace the base's
	// (Namespace when empty: a release whose namespace changes renders into another one).
	Release, Namespace, BaseNamespace string
	// Rules are ignore rules in Flux's syntax.
	Rules []flux.IgnoreRule
	// Views keeps each object's two sides for the line views.
	Views bool
	// NoRefusals leaves out the update validation of the objects the head changes (two
	// renders of the same side, compared for their unstable fields, are no update).
	NoRefusals bool
}

// CompareSets compares two sets of objects with no cluster: base (what is there now: a render
// of the base revision) and head (what comes: a render of the head revision), paired by their
// identity (group, kind, namespace, name: an object keeps its identity across API versions, as
// in the cluster). Each side is normalised as the API server would store it (built-in kinds by
// its own defaulting code; custom resources by the schema of their CRD when either set holds
// it), then compared with the same rules as a measurement against the cluster (compareSides):
// the rows read as every report's, the head as the chart and the base as the other side; an
// object only the head holds is CHART-ONLY (created), one only the base holds is listed in
// Prune (deleted). Every row is a change the head brings (Moved chart). An object the API
// server would refuse to update from the base to the head is WILL-FAIL (refuseUpdate).
func CompareSets(base, head []manifest.Object, o SetOptions) (*Report, error) {
	all := append(append([]manifest.Object{}, base...), head...)
	baseNS := o.BaseNamespace
	if baseNS == "" {
		baseNS = o.Namespace
	}
	schemas := newCRDIndex(all)
	index := func(objs []manifest.Object, namespace string) (map[manifest.Identity]manifest.Object, []manifest.Identity, error) {
		ids := manifest.NewIdentifier(all, namespace, nil)
		byID := map[manifest.Identity]manifest.Object{}
		var order []manifest.Identity
		for _, ob := range objs {
			if ob.Hook || ob.Name == "" {
				continue
			}
			id := ids.Identity(ob)
			if _, dup := byID[id]; dup {
				return nil, nil, fmt.Errorf("%s: %s is rendered twice", ob.Where(), id)
			}
			byID[id] = ob
			order = append(order, id)
		}
		return byID, order, nil
	}
	baseByID, baseOrder, err := index(base, baseNS)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	headByID, headOrder, err := index(head, o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	rep := &Report{Release: o.Release, Namespace: o.Namespace, Normalize: Offline, Rendered: true, Apply: ApplyClientSide,
		Counts: map[compare.Class]int{}, Objects: []Object{}, Prune: []Prune{}}
	for _, id := range headOrder {
		h := headByID[id]
		ob := Object{Object: id.String(), Normalize: string(Offline), Rows: []Row{}}
		headSide, err := storedAs(h, id, schemas)
		if err != nil {
			ob.Error, ob.Normalize = err.Error(), "-"
			rep.Unmeasured++
			rep.Objects = append(rep.Objects, ob)
			continue
		}
		b, ok := baseByID[id]
		if !ok {
			ob.Missing, ob.Compared = true, 1
			ob.Rows = append(ob.Rows, Row{Class: compare.ChartOnly, Path: "(whole object)", Resolved: true, Why: "created", Moved: MovedChart})
			if o.Views {
				ob.View = compare.OneSide(headSide, nil)
			}
		} else {
			// An object written the same on both sides (most of a render) is normalised once.
			baseSide, err := headSide, error(nil)
			if !sameDocument(b, h) {
				baseSide, err = storedAs(b, id, schemas)
			}
			if err != nil {
				ob.Error, ob.Normalize = "base: "+err.Error(), "-"
				rep.Unmeasured++
				rep.Objects = append(rep.Objects, ob)
				continue
			}
			tm := kyaml.TypeMeta{APIVersion: h.APIVersion, Kind: h.Kind}
			res := compareSides(tm, id, headSide, baseSide, o.Rules, o.Views, &ob)
			for _, dv := range res.Divergences {
				ob.Rows = append(ob.Rows, Row{Class: dv.Class, Path: dv.Path, Pointer: dv.Pointer, Chart: dv.Chart, Cluster: dv.Cluster,
					Redacted: dv.Redacted, Inert: dv.Inert, ChartBytes: dv.ChartSize, ClusterBytes: dv.ClusterSize,
					Resolved: true, Why: "the head changes it", Moved: MovedChart})
			}
			if len(ob.Rows) > 0 && !o.NoRefusals {
				refuseUpdate(&ob, b, h, id)
			}
		}
		if ob.Refusal != nil {
			rep.WillFail++
		}
		rep.Compared += ob.Compared
		for _, r := range ob.Rows {
			rep.Counts[r.Class]++
			if r.Class != compare.Shadows {
				rep.Divergences++
				rep.Changes++
			}
		}
		rep.Objects = append(rep.Objects, ob)
	}
	for _, id := range baseOrder {
		if _, ok := headByID[id]; ok {
			continue
		}
		p := Prune{Object: id.String(), Live: true}
		if d, err := baseByID[id].Decode(); err == nil {
			md, _ := d["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			p.Keep = ann["helm.sh/resource-policy"] == "keep"
			if o.Views {
				p.View = compare.OneSide(nil, normalize.Object(withNamespace(d, id.Namespace), ""))
			}
		}
		rep.Prune = append(rep.Prune, p)
	}
	sort.SliceStable(rep.Objects, func(i, j int) bool { return rep.Objects[i].Object < rep.Objects[j].Object })
	sort.Slice(rep.Prune, func(i, j int) bool { return rep.Prune[i].Object < rep.Prune[j].Object })
	return rep, nil
}

// refuseUpdate runs, offline, the API server's update validation of head's object written over
// base's (defaulting.ValidateUpdate: the kinds whose fields an update may not change), as the
// upgrade from one render to the other writes it: a change the server refuses (a Deployment's
// selector, a StatefulSet's volumeClaimTemplates, a Job's template) makes the object WILL-FAIL,
// and the upgrade fails on it.
func refuseUpdate(ob *Object, base, head manifest.Object, id manifest.Identity) {
	b, err := base.Decode()
	if err != nil {
		return
	}
	h, err := head.Decode()
	if err != nil {
		return
	}
	if id.Namespace != "" {
		b, h = withNamespace(b, id.Namespace), withNamespace(h, id.Namespace)
	}
	refused, known, err := defaulting.ValidateUpdate(applyOver(b, h, head.Kind), b)
	if !known || err != nil || len(refused) == 0 {
		return
	}
	willFail(ob, refused, "the API server's update validation of the head over the base, run here")
}

// WhyWillFail is the Why of the rows of an object the API server refuses (Object.Refusal).
const WhyWillFail = "the upgrade fails on this object (the API server refuses it: WILL-FAIL)"

// sameDocument: a and b are written the same (one document, or the same bytes), so they
// normalise the same.
func sameDocument(a, b manifest.Object) bool {
	return a.Item == b.Item && (a.Doc == b.Doc || bytes.Equal(a.Doc.Body, b.Doc.Body))
}

// storedAs is ob as the API server would store it, normalised for comparison: decoded, in its
// namespace, defaulted (a built-in kind by the API server's own code, a custom resource by its
// CRD's schema from schemas when there is one).
func storedAs(ob manifest.Object, id manifest.Identity, schemas *crdIndex) (map[string]any, error) {
	obj, err := ob.Decode()
	if err != nil {
		return nil, err
	}
	if id.Namespace != "" {
		obj = withNamespace(obj, id.Namespace)
	}
	if out, ok, err := defaulting.BuiltIn(obj); ok {
		if err != nil {
			return nil, err
		}
		obj = out
	} else if sch := schemas.schema(ob.APIVersion, ob.Kind); sch != nil {
		if out, err := defaulting.CustomResource(obj, sch); err == nil {
			obj = out
		}
	}
	return normalize.Object(obj, id.Namespace), nil
}

// crdIndex holds the structural schemas of the CRDs of a set of objects, by apiVersion and
// kind, each CRD decoded only when an object of its group needs it (most renders that carry
// CRDs carry none of their resources, and a CRD is large). A CRD's name is its plural and its
// group ("<plural>.<group>", as the API server requires), so a group's CRDs are found by name.
// Of two CRDs of one kind (base and head), the later one's schema is kept.
type crdIndex struct {
	crds    []manifest.Object
	read    map[string]bool
	schemas map[[2]string]*defaulting.Schema
}

func newCRDIndex(objs []manifest.Object) *crdIndex {
	c := &crdIndex{read: map[string]bool{}, schemas: map[[2]string]*defaulting.Schema{}}
	for _, ob := range objs {
		if ob.Kind == "CustomResourceDefinition" {
			c.crds = append(c.crds, ob)
		}
	}
	return c
}

// schema is the schema of apiVersion's kind from the CRDs held, nil when none holds it.
func (c *crdIndex) schema(apiVersion, kind string) *defaulting.Schema {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok || len(c.crds) == 0 {
		return nil // the core group has no CRDs
	}
	if !c.read[group] {
		c.read[group] = true
		type place struct {
			doc  *manifest.Document
			item int
		}
		seen := map[place]bool{}
		for _, ob := range c.crds {
			if !strings.HasSuffix(ob.Name, "."+group) || seen[place{ob.Doc, ob.Item}] {
				continue
			}
			seen[place{ob.Doc, ob.Item}] = true
			c.add(ob)
		}
	}
	return c.schemas[[2]string{apiVersion, kind}]
}

// add reads one CRD's schemas, a version each.
func (c *crdIndex) add(ob manifest.Object) {
	crd, err := ob.Decode()
	if err != nil {
		return
	}
	spec, _ := crd["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		sv, _ := vm["schema"].(map[string]any)
		open, _ := sv["openAPIV3Schema"].(map[string]any)
		if open == nil {
			continue
		}
		if sch, err := defaulting.NewSchema(open); err == nil {
			c.schemas[[2]string{group + "/" + name, kind}] = sch
		}
	}
}
