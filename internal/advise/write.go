package advise

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The formats of --suggest-ignore.
const (
	// Flux is helm-controller's spec.driftDetection.ignore: paths (JSON pointers) and target.
	Flux = "flux"
	// ArgoCD is an Application's spec.ignoreDifferences: jqPathExpressions by object.
	ArgoCD = "argocd"
)

// ArgoCDIgnoreDifferences is the fragment of an Argo CD Application's spec that -argocd writes,
// its entries with the JSON fields of Argo CD's ResourceIgnoreDifferences
// (pkg/apis/application/v1alpha1), for reading the output back strictly.
type ArgoCDIgnoreDifferences struct {
	IgnoreDifferences []struct {
		Group                 string   `json:"group,omitempty"`
		Kind                  string   `json:"kind"`
		Name                  string   `json:"name,omitempty"`
		Namespace             string   `json:"namespace,omitempty"`
		JSONPointers          []string `json:"jsonPointers,omitempty"`
		JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
		ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
	} `json:"ignoreDifferences"`
}

// Write prints the advice for one release (named by what, "release shop/web") as YAML in
// format, each rule led by a comment naming the manager that owns the field and the row it
// covers, then as comments the fields that get no rule and why. What it prints parses as the
// format's own type (flux: a HelmRelease spec fragment; argocd: an Application spec fragment).
func Write(w io.Writer, a *Advice, what, format string) error {
	switch format {
	case Flux:
		writeFlux(w, a, what)
	case ArgoCD:
		writeArgo(w, a, what)
	default:
		return fmt.Errorf("--suggest-ignore %q: want flux or argocd", format)
	}
	for _, s := range a.Skipped {
		fmt.Fprintf(w, "# no rule for %s %s: %s\n", s.Object, s.Path, s.Why)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	return nil
}

func writeFlux(w io.Writer, a *Advice, what string) {
	fmt.Fprintf(w, "# helm-drift --suggest-ignore: %d rules for %s, as a HelmRelease's spec.driftDetection.ignore\n", len(a.Rules), what)
	if len(a.Rules) == 0 {
		fmt.Fprintln(w, "driftDetection:\n  ignore: []")
		return
	}
	fmt.Fprintln(w, "driftDetection:\n  ignore:")
	for _, r := range a.Rules {
		comment(w, "  ", r)
		if r.Indexed {
			fmt.Fprintf(w, "  # the pointer picks a list element by its index: this rule breaks if the list is reordered; index-free but wider: %s (the whole list)\n", r.Wider)
		}
		fmt.Fprintf(w, "  - paths: [%s]\n", quote(r.Pointer))
		target := []string{}
		for _, kv := range [][2]string{{"group", r.Group}, {"version", r.Version}, {"kind", r.Kind}, {"name", r.Name}, {"namespace", r.Namespace}} {
			if kv[1] != "" {
				target = append(target, kv[0]+": "+quote(kv[1]))
			}
		}
		fmt.Fprintf(w, "    target: {%s}\n", strings.Join(target, ", "))
	}
}

func writeArgo(w io.Writer, a *Advice, what string) {
	fmt.Fprintf(w, "# helm-drift --suggest-ignore=argocd: %d rules for %s, as an Application's spec.ignoreDifferences\n", len(a.Rules), what)
	if len(a.Rules) == 0 {
		fmt.Fprintln(w, "ignoreDifferences: []")
		return
	}
	fmt.Fprintln(w, "ignoreDifferences:")
	for _, r := range a.Rules {
		comment(w, "", r)
		if r.Group != "" {
			fmt.Fprintf(w, "- group: %s\n  kind: %s\n", quote(r.Group), quote(r.Kind))
		} else {
			fmt.Fprintf(w, "- kind: %s\n", quote(r.Kind))
		}
		fmt.Fprintf(w, "  name: %s\n", quote(r.Name))
		if r.Namespace != "" {
			fmt.Fprintf(w, "  namespace: %s\n", quote(r.Namespace))
		}
		fmt.Fprintf(w, "  jqPathExpressions: [%s]\n", quote(r.JQ))
	}
}

// comment leads a rule with who owns the field and which row it covers.
func comment(w io.Writer, indent string, r Rule) {
	fmt.Fprintf(w, "%s# %s %s: set by %s: %s\n", indent, r.Object, r.Path, strings.Join(r.Managers, ", "), r.Why)
}

// quote writes s as a YAML scalar: a JSON string is one.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
