// Package resourceset builds the objects of a Flux Operator ResourceSet
// (fluxcd.controlplane.io/v1) offline, as the operator's ResourceSet controller builds them
// from the object kustomize-controller applied: its templates (spec.resources,
// spec.resourcesTemplate, or spec.steps) rendered once per input set of spec.inputs with the
// "<< >>" delimiters, slim-sprig's functions, slugify, toYaml and inputs; the objects
// annotated fluxcd.controlplane.io/reconcile: disabled left out, duplicates kept once; the
// operator's owner labels and spec.commonMetadata set on each.
//
// What only the cluster can answer is refused with an *Unexpanded error naming it: inputs
// from ResourceSetInputProviders (spec.inputsFrom: pull requests, tags, a static provider
// whose id is its object's UID), the Permute input strategy over them.
// xref: the ResourceSet API, docs/api/v1/resourceset.md of
// github.com/controlplaneio-fluxcd/flux-operator ("Writing a ResourceSet spec").
package resourceset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	sprig "github.com/go-task/slim-sprig/v3"
	"github.com/gosimple/slug"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

const (
	// Group is the Flux Operator's API group.
	Group = "fluxcd.controlplane.io"
	// Kind is the ResourceSet's kind.
	Kind = "ResourceSet"
	// OwnerName and OwnerNamespace are the labels the operator sets on the objects it applies:
	// the name and namespace of their ResourceSet.
	OwnerName      = "resourceset.fluxcd.controlplane.io/name"
	OwnerNamespace = "resourceset.fluxcd.controlplane.io/namespace"
	// PruneAnnotation set to disabled keeps the operator from deleting an object its
	// ResourceSet no longer makes.
	PruneAnnotation = "fluxcd.controlplane.io/prune"
	// reconcileAnnotation set to disabled leaves an object out.
	reconcileAnnotation = "fluxcd.controlplane.io/reconcile"
)

// Unexpanded says why a ResourceSet cannot be built offline.
type Unexpanded struct{ Why string }

// Error is the reason.
func (e *Unexpanded) Error() string { return e.Why }

func init() {
	// slugify makes label values: at most 63 characters, cut between words.
	slug.MaxLength = 63
	slug.EnableSmartTruncate = true
}

// spec is what the build reads of a ResourceSet.
type spec struct {
	Inputs        []map[string]json.RawMessage `json:"inputs"`
	InputsFrom    []json.RawMessage            `json:"inputsFrom"`
	InputStrategy *struct {
		Name string `json:"name"`
	} `json:"inputStrategy"`
	Resources         []json.RawMessage `json:"resources"`
	ResourcesTemplate string            `json:"resourcesTemplate"`
	Steps             []struct {
		Name              string            `json:"name"`
		Resources         []json.RawMessage `json:"resources"`
		ResourcesTemplate string            `json:"resourcesTemplate"`
	} `json:"steps"`
	CommonMetadata *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"commonMetadata"`
}

// Providers answers what the cluster's ResourceSetInputProviders export.
type Providers struct {
	// Inputs are the input sets the provider namespace/name exports (its
	// status.exportedInputs).
	Inputs func(namespace, name string) ([]map[string]any, error)
	// Select, when set, names the providers of namespace that selector selects; nil: a
	// ResourceSet that selects its providers by label is not built.
	Select func(namespace string, selector labels.Selector) ([]string, error)
}

// inputRef is an entry of spec.inputsFrom.
type inputRef struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Selector json.RawMessage `json:"selector"`
}

// Build returns the objects the operator applies for the ResourceSet rs (its fields, as
// decoded from YAML or JSON), in its order: the steps in turn, in each the objects of
// spec.resources then those of spec.resourcesTemplate. Inputs from providers (spec.inputsFrom,
// by name or label selector) are read from providers, the cluster's; with none, such a
// ResourceSet is Unexpanded.
func Build(rs map[string]any, providers *Providers) ([]map[string]any, error) {
	u := unstructured.Unstructured{Object: rs}
	raw, err := json.Marshal(rs["spec"])
	if err != nil {
		return nil, err
	}
	if u.GetAnnotations()[reconcileAnnotation] == "disabled" {
		return nil, &Unexpanded{"its reconciliation is disabled (" + reconcileAnnotation + ": disabled): the operator leaves its objects as they are"}
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if len(s.InputsFrom) > 0 && providers == nil {
		return nil, &Unexpanded{"its inputs come from ResourceSetInputProviders (spec.inputsFrom), which only the cluster answers (--live reads them)"}
	}
	if s.InputStrategy != nil && s.InputStrategy.Name != "" && s.InputStrategy.Name != "Flatten" {
		return nil, &Unexpanded{fmt.Sprintf("input strategy %s is not built offline", s.InputStrategy.Name)}
	}
	if len(s.Steps) > 0 && (len(s.Resources) > 0 || s.ResourcesTemplate != "") {
		return nil, errors.New("spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate")
	}
	// The inline inputs, each with the reference of the object providing it.
	inputs, err := decodeInputs(s.Inputs)
	if err != nil {
		return nil, err
	}
	for _, in := range inputs {
		in["provider"] = map[string]any{"apiVersion": Group + "/v1", "kind": Kind, "name": u.GetName(), "namespace": u.GetNamespace()}
	}
	// Then those of each provider, in the order of their names (all of the ResourceSet's
	// namespace, all of one kind), each with its reference.
	if len(s.InputsFrom) > 0 {
		fromProviders, err := providerInputs(s.InputsFrom, u.GetNamespace(), providers)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, fromProviders...)
		if len(inputs) == 0 {
			return nil, nil // no input sets from its providers: the operator applies none
		}
	}
	var objects []*unstructured.Unstructured
	if len(s.Steps) == 0 {
		if objects, err = build(s.ResourcesTemplate, s.Resources, inputs); err != nil {
			return nil, err
		}
	}
	stepOf := map[string]string{}
	for _, st := range s.Steps {
		if len(st.Resources) == 0 && st.ResourcesTemplate == "" {
			return nil, fmt.Errorf("step %q: at least one of resources or resourcesTemplate must be set", st.Name)
		}
		objs, err := build(st.ResourcesTemplate, st.Resources, inputs)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", st.Name, err)
		}
		for _, o := range objs {
			k := key(o)
			if prev, ok := stepOf[k]; ok && prev != st.Name {
				return nil, fmt.Errorf("duplicate resource %s/%s/%s in step %q, already defined in step %q", o.GetKind(), o.GetNamespace(), o.GetName(), st.Name, prev)
			}
			stepOf[k] = st.Name
		}
		objects = append(objects, objs...)
	}
	out := make([]map[string]any, 0, len(objects))
	for _, o := range objects {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[OwnerName], labels[OwnerNamespace] = u.GetName(), u.GetNamespace()
		o.SetLabels(labels)
		out = append(out, o.Object)
	}
	if cm := s.CommonMetadata; cm != nil {
		ssautil.SetCommonMetadata(objects, cm.Labels, cm.Annotations)
	}
	return out, nil
}

// DecodeInputs reads input sets from JSON (a list of objects: spec.inputs, a provider's
// status.exportedInputs) as the operator reads them: each value by itself, a whole number as
// an integer (k8s.io/apimachinery's JSON), so that << inputs.id >> prints 340788154, not
// 3.40788154e+08; a set written as null is an empty one.
func DecodeInputs(data []byte) ([]map[string]any, error) {
	var sets []map[string]json.RawMessage
	if err := json.Unmarshal(data, &sets); err != nil {
		return nil, err
	}
	return decodeInputs(sets)
}

// decodeInputs decodes each value of each input set (see DecodeInputs).
func decodeInputs(sets []map[string]json.RawMessage) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(sets))
	for i, set := range sets {
		in := make(map[string]any, len(set))
		for k, raw := range set {
			var v any
			if err := kjson.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("inputs[%d].%s: %w", i, k, err)
			}
			in[k] = v
		}
		out = append(out, in)
	}
	return out, nil
}

// providerInputs are the input sets of the providers refs name or select, in the namespace of
// the ResourceSet, each provider once, in the order of their names, each input set with the
// provider's reference.
func providerInputs(raw []json.RawMessage, namespace string, providers *Providers) ([]map[string]any, error) {
	names := map[string]bool{}
	for i, r := range raw {
		var ref inputRef
		if err := json.Unmarshal(r, &ref); err != nil {
			return nil, fmt.Errorf("spec.inputsFrom[%d]: %w", i, err)
		}
		switch {
		case ref.Kind != "" && ref.Kind != "ResourceSetInputProvider":
			return nil, fmt.Errorf("spec.inputsFrom[%d]: kind %s: only ResourceSetInputProvider provides inputs", i, ref.Kind)
		case ref.Name != "":
			names[ref.Name] = true
		case len(ref.Selector) > 0:
			if providers.Select == nil {
				return nil, &Unexpanded{fmt.Sprintf("it selects its ResourceSetInputProviders by label (spec.inputsFrom[%d].selector), which only the cluster lists (--live reads them)", i)}
			}
			var ls metav1.LabelSelector
			if err := json.Unmarshal(ref.Selector, &ls); err != nil {
				return nil, fmt.Errorf("spec.inputsFrom[%d].selector: %w", i, err)
			}
			sel, err := metav1.LabelSelectorAsSelector(&ls)
			if err != nil {
				return nil, fmt.Errorf("spec.inputsFrom[%d].selector: %w", i, err)
			}
			selected, err := providers.Select(namespace, sel)
			if err != nil {
				return nil, &Unexpanded{fmt.Sprintf("list the ResourceSetInputProviders of %s: %v", namespace, err)}
			}
			for _, n := range selected {
				names[n] = true
			}
		default:
			return nil, fmt.Errorf("spec.inputsFrom[%d]: neither a name nor a selector", i)
		}
	}
	var out []map[string]any
	for _, name := range slices.Sorted(maps.Keys(names)) {
		sets, err := providers.Inputs(namespace, name)
		if err != nil {
			return nil, &Unexpanded{fmt.Sprintf("ResourceSetInputProvider %s/%s: %v", namespace, name, err)}
		}
		for _, in := range sets {
			if in == nil {
				in = map[string]any{} // a set written as null: an empty one
			}
			in["provider"] = map[string]any{"apiVersion": Group + "/v1", "kind": "ResourceSetInputProvider", "name": name, "namespace": namespace}
			out = append(out, in)
		}
	}
	return out, nil
}

// build renders the templates once per input set (once with none when there is none): each
// object of the JSON templates, then the documents of the YAML template. An object annotated
// reconcile: disabled is left out and a second object of the same group, kind, namespace and
// name is dropped, but for the JSON templates rendered without inputs, kept as they come.
func build(yamlTemplate string, templates []json.RawMessage, inputs []map[string]any) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	add := func(o *unstructured.Unstructured, dedup bool) {
		if dedup && (o.GetAnnotations()[reconcileAnnotation] == "disabled" || seen[key(o)]) {
			return
		}
		seen[key(o)] = true
		out = append(out, o)
	}
	for i, t := range templates {
		text, err := yaml.JSONToYAML(t)
		if err != nil {
			return nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		if len(inputs) == 0 {
			o, err := one(string(text), nil)
			if err != nil {
				return nil, fmt.Errorf("resources[%d]: %w", i, err)
			}
			add(o, false)
			continue
		}
		for _, in := range inputs {
			o, err := one(string(text), in)
			if err != nil {
				return nil, fmt.Errorf("resources[%d]: %w", i, err)
			}
			add(o, true)
		}
	}
	if yamlTemplate == "" {
		return out, nil
	}
	sets := inputs
	if len(sets) == 0 {
		sets = []map[string]any{nil}
	}
	for _, in := range sets {
		text, err := render(yamlTemplate, in)
		if err != nil {
			return nil, fmt.Errorf("resourcesTemplate: %w", err)
		}
		objs, err := ssautil.ReadObjects(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("resourcesTemplate: %w", err)
		}
		for _, o := range objs {
			add(o, true)
		}
	}
	return out, nil
}

// one renders a template of one object.
func one(text string, in map[string]any) (*unstructured.Unstructured, error) {
	s, err := render(text, in)
	if err != nil {
		return nil, err
	}
	return ssautil.ReadObject(strings.NewReader(s))
}

// render executes a template with the input set in: "<< >>" delimiters, slim-sprig's
// functions, slugify, toYaml and mustToYaml, the input set as the function inputs, and a
// missing key an error.
func render(text string, in map[string]any) (string, error) {
	t, err := template.New("resourceset").Delims("<<", ">>").
		Funcs(sprig.HermeticTxtFuncMap()).
		Funcs(template.FuncMap{
			"slugify":    slug.Make,
			"inputs":     func() any { return in },
			"toYaml":     func(v any) string { s, _ := toYAML(v); return s },
			"mustToYaml": toYAML,
		}).
		Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse the template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return "", fmt.Errorf("execute the template: %w", err)
	}
	return b.String(), nil
}

// toYAML is v as YAML ("" and the error when it does not encode).
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// key is what the operator deduplicates by: group, kind, namespace and name.
func key(o *unstructured.Unstructured) string {
	return strings.Join([]string{o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName()}, "/")
}
