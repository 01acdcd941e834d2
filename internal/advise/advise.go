// Package advise suggests the ignore rules that keep drift correction from fighting another
// controller: for each field the chart states and the cluster holds otherwise, it asks
// metadata.managedFields who owns the cluster's value, and suggests the narrowest rule (Flux's
// driftDetection.ignore, or Argo CD's ignoreDifferences) only where the owner is a controller:
// one known by its field manager's name, or one that owns such a field by its nature (an HPA's
// target's replicas, an injected caBundle, an aggregated ClusterRole's rules). A field the
// release's writer or a person's tool (kubectl's managers) owns gets no rule: that is the drift
// the user wants corrected. A manager it cannot tell to be either gets no rule and is named.
package advise

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-openapi/jsonpointer"

	"github.com/helm-drift/helm-drift/internal/managedfields"
)

// Object is one measured object as the advisor reads it.
type Object struct {
	// Group, Version, Kind, Namespace and Name identify it; Name is the report's ("Deployment.apps
	// shop/web") in Title.
	Group, Version, Kind, Namespace, Name, Title string
	// Live is the live object, with its managedFields.
	Live map[string]any
	// Fields are the fields the chart states and the cluster holds with another value
	// (DIFFERS rows): their paths (lists by merge key) and pointers (by index in Live).
	Fields []Field
}

// Field is one divergence the advisor looks at.
type Field struct {
	Path, Pointer string
}

// Scaler is a HorizontalPodAutoscaler: what it scales.
type Scaler struct {
	Namespace, Name string
	// Target is its scaleTargetRef.
	TargetGroup, TargetKind, TargetName string
}

// Rule is one suggested rule: one field of one object, who owns it and why a rule is right.
type Rule struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Object is the report's name of the object.
	Object string `json:"object"`
	// Path is the row's field (lists by merge key); Pointer its JSON pointer in the live
	// object, which Flux's paths take.
	Path    string `json:"path"`
	Pointer string `json:"pointer"`
	// Indexed: the pointer picks a list element by its index: the rule breaks if the list is
	// reordered. Wider is then the smallest enclosing pointer without an index (it ignores the
	// whole list), JQ the index-free Argo CD expression.
	Indexed bool   `json:"indexed,omitempty"`
	Wider   string `json:"wider,omitempty"`
	JQ      string `json:"jqPathExpression"`
	// Managers own the cluster's value; Why says why they are a controller's.
	Managers []string `json:"managers"`
	Why      string   `json:"why"`
}

// Skipped is a field another manager owns that gets no rule, and why.
type Skipped struct {
	Object   string   `json:"object"`
	Path     string   `json:"path"`
	Managers []string `json:"managers"`
	Why      string   `json:"why"`
}

// Advice is what the advisor suggests for one report.
type Advice struct {
	Rules   []Rule    `json:"rules"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Notes say what the advisor could not read.
	Notes []string `json:"notes,omitempty"`
}

// controllers are the field managers known to be controllers, and what each does.
var controllers = map[string]string{
	"kube-controller-manager":            "Kubernetes' controller manager (the HPA, and other built-in controllers)",
	"clusterrole-aggregation-controller": "Kubernetes' ClusterRole aggregation",
	"cert-manager-cainjector":            "cert-manager's cainjector",
	"cainjector":                         "cert-manager's cainjector",
	"vpa-updater":                        "the Vertical Pod Autoscaler",
	"vpa-admission-controller":           "the Vertical Pod Autoscaler",
	"keda-operator":                      "KEDA",
}

// writers are the managers that write releases: their fields are the release's own.
var writers = map[string]bool{"helm": true, "helm-controller": true}

// human reports whether a manager is a person's tool: kubectl (kubectl-edit, kubectl-patch,
// kubectl-client-side-apply, kubectl-scale, ...) or k9s.
func human(name string) bool {
	return name == "kubectl" || strings.HasPrefix(name, "kubectl-") || name == "k9s"
}

// injectAnnotations mark an object whose caBundle an injector writes.
var injectAnnotations = []string{
	"cert-manager.io/inject-ca-from", "cert-manager.io/inject-ca-from-secret", "cert-manager.io/inject-apiserver-ca",
	"service.beta.openshift.io/inject-cabundle",
}

// Advise suggests rules for objs; scalers are the HPAs of the objects' namespaces.
func Advise(objs []Object, scalers []Scaler) *Advice {
	a := &Advice{Rules: []Rule{}}
	for _, o := range objs {
		managers := managedfields.Fields(o.Live)
		writer, hasWriter := managedfields.Helm(o.Live, managers)
		for _, f := range o.Fields {
			var owners []string
			for _, m := range managedfields.OwnersIn(o.Live, managers, f.Pointer, "scale") {
				if (hasWriter && m.Name == writer.Name) || writers[m.Name] || slices.Contains(owners, m.Name) {
					continue
				}
				owners = append(owners, m.Name)
			}
			if len(owners) == 0 {
				continue // the release's own field, or nobody's: the drift the user wants corrected
			}
			var people, known, unknown []string
			for _, m := range owners {
				switch {
				case human(m):
					people = append(people, m)
				case controllers[m] != "":
					known = append(known, m)
				default:
					unknown = append(unknown, m)
				}
			}
			nature := byNature(o, f, scalers)
			switch {
			case len(people) > 0:
				a.Skipped = append(a.Skipped, Skipped{Object: o.Title, Path: f.Path, Managers: owners,
					Why: "set by " + strings.Join(people, ", ") + ", a person's tool: drift correction should reset it, so no rule"})
			case len(unknown) > 0 && nature == "":
				a.Skipped = append(a.Skipped, Skipped{Object: o.Title, Path: f.Path, Managers: owners,
					Why: "cannot tell whether " + strings.Join(unknown, ", ") + " is a controller or a person: no rule (write one by hand if it is a controller)"})
			default:
				why := nature
				if why == "" {
					var whose []string
					for _, m := range known {
						whose = append(whose, m+" ("+controllers[m]+")")
					}
					why = "owned by " + strings.Join(whose, ", ")
				}
				a.Rules = append(a.Rules, rule(o, f, owners, why))
			}
		}
	}
	sort.SliceStable(a.Rules, func(i, j int) bool { return a.Rules[i].Object < a.Rules[j].Object })
	return a
}

// byNature says why a field is a controller's by what it is ("" when it is not such a field).
func byNature(o Object, f Field, scalers []Scaler) string {
	md, _ := o.Live["metadata"].(map[string]any)
	switch {
	case f.Pointer == "/spec/replicas" && (o.Kind == "Deployment" || o.Kind == "StatefulSet" || o.Kind == "ReplicaSet"):
		for _, s := range scalers {
			if s.Namespace == o.Namespace && s.TargetKind == o.Kind && s.TargetName == o.Name && (s.TargetGroup == o.Group || s.TargetGroup == "") {
				return "HorizontalPodAutoscaler " + s.Namespace + "/" + s.Name + " scales " + o.Kind + " " + o.Name
			}
		}
	case strings.HasSuffix(f.Pointer, "/caBundle") && (o.Kind == "ValidatingWebhookConfiguration" || o.Kind == "MutatingWebhookConfiguration" ||
		o.Kind == "CustomResourceDefinition" || o.Kind == "APIService"):
		ann, _ := md["annotations"].(map[string]any)
		for _, a := range injectAnnotations {
			if _, ok := ann[a]; ok {
				return "its caBundle is injected (annotation " + a + ")"
			}
		}
	case (f.Pointer == "/rules" || strings.HasPrefix(f.Pointer, "/rules/")) && o.Kind == "ClusterRole":
		if _, ok := o.Live["aggregationRule"]; ok {
			return "an aggregated ClusterRole: its rules are the aggregation's"
		}
	}
	return ""
}

func rule(o Object, f Field, owners []string, why string) Rule {
	r := Rule{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Object: o.Title,
		Path: f.Path, Pointer: f.Pointer, Managers: owners, Why: why}
	segs := splitPointer(f.Pointer)
	var jq strings.Builder
	afterSelect := false
	var cur any = o.Live
	for i, s := range segs {
		l, isList := cur.([]any)
		n, err := strconv.Atoi(s)
		if isList && err == nil && n >= 0 && n < len(l) {
			if !r.Indexed {
				r.Indexed, r.Wider = true, joinPointer(segs[:i])
			}
			if e, _ := l[n].(map[string]any); e != nil && e["name"] != nil {
				name, _ := e["name"].(string)
				jq.WriteString("[] | select(.name == " + strconv.Quote(name) + ")")
				afterSelect = true
			} else {
				jq.WriteString("[" + s + "]")
			}
			cur = l[n]
			continue
		}
		if afterSelect {
			jq.WriteString(" | ")
			afterSelect = false
		}
		if identifier(s) {
			jq.WriteString("." + s)
		} else {
			jq.WriteString(".[" + strconv.Quote(s) + "]")
		}
		m, _ := cur.(map[string]any)
		cur = m[s]
	}
	r.JQ = jq.String()
	return r
}

// identifier reports whether a key can follow a dot in jq.
func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// splitPointer is an RFC 6901 pointer's decoded tokens (none for the root or a bad pointer).
func splitPointer(ptr string) []string {
	p, err := jsonpointer.New(ptr)
	if err != nil {
		return nil
	}
	return p.DecodedTokens()
}

func joinPointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/" + jsonpointer.Escape(s))
	}
	return b.String()
}

// String names a rule's target: "Deployment.apps shop/web".
func (r Rule) String() string { return fmt.Sprintf("%s %s", r.Object, r.Path) }
