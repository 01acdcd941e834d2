package owners

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Options configure the checks.
type Options struct {
	// Namespace is the release namespace: namespaced objects that name none land there.
	Namespace string
	// Release is the name of the release the stream is rendered for (optional in the stream
	// checks, required for the cluster check).
	Release string
	// Scopes answers kinds that neither the built-in data nor a CRD in the stream knows.
	Scopes manifest.ScopeResolver
	// Severity of the findings (default error).
	Severity Severity
}

// Checker holds what the checks learn about a stream's objects: their identities (with the
// Notes of kinds assumed namespaced) and the options.
type Checker struct {
	*manifest.Identifier
	opts Options
}

// Options returns the options c was made with, its severity defaulted.
func (c *Checker) Options() Options { return c.opts }

// NewChecker returns a checker for objs (the objects of one stream).
func NewChecker(objs []manifest.Object, opts Options) *Checker {
	if opts.Severity == "" {
		opts.Severity = SeverityError
	}
	return &Checker{Identifier: manifest.NewIdentifier(objs, opts.Namespace, opts.Scopes), opts: opts}
}

// Stream finds, within one stream, documents that are one object and HelmReleases that write
// one Helm release. Hooks are left out: a hook and a template of one identity are two
// lifecycles, and Helm 4 hands both to a post-renderer.
//
// It fails only when a HelmRelease's document, which the line scanner read, cannot be parsed.
func (c *Checker) Stream(objs []manifest.Object) ([]Finding, error) {
	// Most names are one object's: objects are told apart by name first (one short string to
	// hash), and only those that share a name are told apart by their whole identity.
	byName := make(map[string]int, len(objs)) // name → its one object so far; -1 once shared
	first := map[manifest.Identity]int{}      // the first object of each identity of a shared name
	dups := map[manifest.Identity][]int{}     // only identities seen more than once
	var order []manifest.Identity
	for i, o := range objs {
		if o.Hook || o.Name == "" {
			continue
		}
		id := c.Identity(o) // every object's, for the Notes of kinds assumed namespaced
		j, seen := byName[o.Name]
		if !seen {
			byName[o.Name] = i
			continue
		}
		if j >= 0 {
			first[c.Identity(objs[j])] = j
			byName[o.Name] = -1
		}
		j, seen = first[id]
		if !seen {
			first[id] = i
			continue
		}
		if _, ok := dups[id]; !ok {
			order = append(order, id)
			dups[id] = []int{j}
		}
		dups[id] = append(dups[id], i)
	}
	var findings []Finding
	for _, id := range order {
		f := Finding{ID: IDDuplicate, Severity: c.opts.Severity, Object: id.String()}
		var places []string
		for _, i := range dups[id] {
			o := objs[i]
			f.Owners = append(f.Owners, Owner{Kind: "document", Name: o.Where()})
			places = append(places, o.Where()+" as "+o.APIVersion)
		}
		f.Message = fmt.Sprintf("%s is rendered %d times: %s. One object can have one owner: render it in one template only, or give the copies different names.",
			id, len(places), strings.Join(places, "; "))
		findings = append(findings, f)
	}
	writers, err := c.twoWriters(objs)
	if err != nil {
		return nil, err
	}
	return append(findings, writers...), nil
}

// Target is the Helm release a Flux HelmRelease writes.
type Target struct {
	// Namespace is the HelmRelease's own namespace.
	Namespace string
	// Release is the effective release name; Storage the namespace Helm stores it in.
	Release, Storage string
}

type helmRelease struct {
	Target
	obj manifest.Object
}

func (c *Checker) twoWriters(objs []manifest.Object) ([]Finding, error) {
	byRelease := map[[2]string][]helmRelease{}
	var order [][2]string
	seen := map[manifest.Identity]bool{}
	for _, o := range objs {
		if o.Kind != flux.HelmReleaseKind || o.Group() != flux.HelmReleaseGroup {
			continue
		}
		id := c.Identity(o)
		if seen[id] {
			continue // the same HelmRelease twice is a duplicate identity already
		}
		seen[id] = true
		target, err := targetOf(o, id.Namespace)
		if err != nil {
			return nil, err
		}
		hr := helmRelease{Target: target, obj: o}
		key := [2]string{hr.Storage, hr.Release}
		if _, ok := byRelease[key]; !ok {
			order = append(order, key)
		}
		byRelease[key] = append(byRelease[key], hr)
	}
	var findings []Finding
	for _, key := range order {
		hrs := byRelease[key]
		if len(hrs) < 2 {
			continue
		}
		f := Finding{ID: IDTwoWriters, Severity: c.opts.Severity, Object: "Helm release " + key[0] + "/" + key[1]}
		var names []string
		for _, hr := range hrs {
			name := fmt.Sprintf("HelmRelease %s/%s (%s)", hr.Namespace, hr.obj.Name, hr.obj.Where())
			f.Owners = append(f.Owners, Owner{Kind: "helmrelease", Name: name})
			names = append(names, name)
		}
		f.Message = fmt.Sprintf("%s write one Helm release, %s in namespace %s (storage namespace and release name are equal): each upgrade by one undoes the other. Give one of them its own spec.releaseName or spec.storageNamespace.",
			strings.Join(names, " and "), key[1], key[0])
		findings = append(findings, f)
	}
	return findings, nil
}

// releaseFields are the spec fields that make a HelmRelease's release other than its own name
// in its own namespace.
var releaseFields = [][]byte{[]byte("releaseName"), []byte("targetNamespace"), []byte("storageNamespace")}

// targetOf returns the Helm release the HelmRelease o writes. One the line scanner read, whose
// document names none of releaseFields and holds no backslash (an escape in a quoted key could
// spell one), writes the release of its own name in its own namespace: its spec is not parsed.
// Any other is parsed and read by ReleaseOf.
func targetOf(o manifest.Object, namespace string) (Target, error) {
	if o.Node == nil && o.Item < 0 && !o.Doc.Contains([]byte{'\\'}) && !slices.ContainsFunc(releaseFields, o.Doc.Contains) {
		return Target{Namespace: namespace, Release: flux.ReleaseName(o.Name, "", ""), Storage: namespace}, nil
	}
	n, err := o.Parsed()
	if err != nil {
		return Target{}, err
	}
	return ReleaseOf(n, namespace), nil
}

// ReleaseOf returns the Helm release a HelmRelease writes, the way helm-controller names it
// (flux.ReleaseName), stored in spec.storageNamespace, else the HelmRelease's namespace.
func ReleaseOf(n *yaml.Node, namespace string) Target {
	spec := manifest.Lookup(n, "spec")
	name := manifest.Scalar(manifest.Lookup(n, "metadata"), "name")
	storage := manifest.Scalar(spec, "storageNamespace")
	if storage == "" {
		storage = namespace
	}
	return Target{Namespace: namespace, Release: flux.ReleaseName(name, manifest.Scalar(spec, "releaseName"), manifest.Scalar(spec, "targetNamespace")), Storage: storage}
}

// sortFindings orders findings by object, for stable output.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Object < fs[j].Object })
}
