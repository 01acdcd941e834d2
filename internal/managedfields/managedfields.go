// Package managedfields reads a live object's metadata.managedFields: which field manager owns a
// field, and which manager is Helm's. diff uses it to predict what a server-side apply by
// Helm 4 would do to a field (remove it, conflict on it, leave it).
package managedfields

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Manager is one entry of metadata.managedFields.
type Manager struct {
	// Name is the field manager ("helm", "kubectl-patch", "helm-controller").
	Name string
	// Operation is "Apply" (server-side apply) or "Update".
	Operation string
	// Subresource is "" for the object itself, "status" or "scale" otherwise.
	Subresource string
	// Time is when the manager last wrote the object (its entry's time; zero when absent).
	Time   time.Time
	fields *fieldpath.Set
}

// Fields lists the managers of a live object (decoded JSON); entries whose fieldsV1 cannot be
// read are left out.
func Fields(obj map[string]any) []Manager {
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var out []Manager
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		op, _ := m["operation"].(string)
		sub, _ := m["subresource"].(string)
		raw, err := json.Marshal(m["fieldsV1"])
		if err != nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
			continue
		}
		at, _ := m["time"].(string)
		when, _ := time.Parse(time.RFC3339, at)
		out = append(out, Manager{Name: name, Operation: op, Subresource: sub, Time: when, fields: set})
	}
	return out
}

// releaseMark is the annotation Helm writes on every object of a release: its manager owns it.
var releaseMark = []string{"metadata", "annotations", "meta.helm.sh/release-name"}

// Helm returns the manager that wrote Helm's release annotation on obj: Helm's own field
// manager (the helm binary's name under Helm 4, "helm" under Helm 3). ok is false when no
// manager owns that annotation (objects created before managedFields, or by other means).
func Helm(obj map[string]any, managers []Manager) (Manager, bool) {
	for _, m := range managers {
		if m.Subresource == "" && m.owns(obj, releaseMark) {
			return m, true
		}
	}
	return Manager{}, false
}

// Owners returns the managers that own the field at pointer (an RFC 6901 pointer into obj,
// list elements by index), or a map or list holding it as one atomic value.
func Owners(obj map[string]any, managers []Manager, pointer string) []Manager {
	path := splitPointer(pointer)
	var out []Manager
	for _, m := range managers {
		if m.Subresource == "" && m.owns(obj, path) {
			out = append(out, m)
		}
	}
	return out
}

// OwnersIn is Owners counting also the managers that wrote the field through one of the
// subresources named ("scale": an HPA, kubectl scale).
func OwnersIn(obj map[string]any, managers []Manager, pointer string, subresources ...string) []Manager {
	path := splitPointer(pointer)
	var out []Manager
	for _, m := range managers {
		if (m.Subresource == "" || slices.Contains(subresources, m.Subresource)) && m.owns(obj, path) {
			out = append(out, m)
		}
	}
	return out
}

// owns walks path through obj and the manager's field set together.
func (m Manager) owns(obj map[string]any, path []string) bool {
	set := m.fields
	var cur any = obj
	for i, seg := range path {
		pe, next, ok := element(cur, seg, set)
		if !ok {
			return false
		}
		child, found := set.Children.Get(pe)
		// A member owns the element itself; with no children listed under it, the manager
		// set it as one atomic value and owns all of it.
		if set.Members.Has(pe) && (i == len(path)-1 || !found) {
			return true
		}
		if !found {
			return false
		}
		set, cur = child, next
	}
	return !set.Empty()
}

// element returns the path element that names seg of cur in set, and the value there.
func element(cur any, seg string, set *fieldpath.Set) (fieldpath.PathElement, any, bool) {
	switch c := cur.(type) {
	case map[string]any:
		return fieldpath.FieldNameElement(seg), c[seg], true
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(c) {
			return fieldpath.PathElement{}, nil, false
		}
		e := c[i]
		var found fieldpath.PathElement
		ok := false
		match := func(pe fieldpath.PathElement) {
			if !ok && matches(pe, e, i) {
				found, ok = pe, true
			}
		}
		set.Members.Iterate(match)
		set.Children.Iterate(match)
		return found, e, ok
	}
	return fieldpath.PathElement{}, nil, false
}

// matches reports whether pe (a key, value or index element) selects e, element i of a list.
func matches(pe fieldpath.PathElement, e any, i int) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Value != nil:
		return value.Equals(*pe.Value, value.NewValueInterface(e))
	case pe.Key != nil:
		m, isMap := e.(map[string]any)
		if !isMap {
			return false
		}
		for _, f := range *pe.Key {
			v, has := m[f.Name]
			if !has || !value.Equals(f.Value, value.NewValueInterface(v)) {
				return false
			}
		}
		return true
	}
	return false
}

func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// Names returns the managers' names.
func Names(ms []Manager) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
