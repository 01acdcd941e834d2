package action

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// markUnstable flags the rows of rep on which the head's two renders disagree (again: the
// head compared with its second render): every reconcile that renders changes them, so they
// are not counted as changes unless count.
func markUnstable(rep, again *diff.Report, count bool) {
	unstable := map[[2]string]bool{}
	for _, o := range again.Objects {
		for _, r := range o.Rows {
			unstable[[2]string{o.Object, r.Path}] = true
		}
	}
	for i := range rep.Objects {
		o := &rep.Objects[i]
		for j := range o.Rows {
			r := &o.Rows[j]
			if !unstable[[2]string{o.Object, r.Path}] {
				continue
			}
			r.Unstable = true
			rep.Unstable++
			if !count && r.Class != compare.Shadows {
				rep.Divergences--
				rep.Changes--
			}
		}
	}
	rep.CountedUnstable = count && rep.Unstable > 0
}

// markCRDs marks the rows of CRDs that helm-controller's upgrade will not apply by its CRD
// policy: none under Skip; under Create only the CRDs that do not exist yet.
// xref: helm-controller internal/action/crds.go applyCRDs.
func markCRDs(rep *diff.Report, policy string) {
	for i := range rep.Objects {
		o := &rep.Objects[i]
		if !strings.HasPrefix(o.Object, "CustomResourceDefinition.") {
			continue
		}
		why := ""
		switch {
		case policy == string(v2.Skip):
			why = "not applied: upgrade.crds is Skip"
		case policy == string(v2.Create) && !o.Missing:
			why = "not applied: upgrade.crds is Create, which only creates CRDs that do not exist (CreateReplace updates them)"
		}
		if why == "" {
			continue
		}
		for j := range o.Rows {
			o.Rows[j].Resolved, o.Rows[j].Why = false, why
		}
	}
}

// causes say what changed between the two sides' inputs: the chart's version, spec.values'
// keys, each valuesFrom source, the post-renderers, other spec fields, the chart's source,
// the substitution variables.
func causes(p treePair, base, head *treeSide) []string {
	switch {
	case base == nil:
		return []string{"the head adds the HelmRelease"}
	case head == nil:
		return []string{"the head removes the HelmRelease"}
	}
	var out []string
	bc, hc := base.built.Chart.Metadata, head.built.Chart.Metadata
	if bc.Name != hc.Name || bc.Version != hc.Version {
		out = append(out, fmt.Sprintf("chart %s %s → %s %s (its templates and default values)", bc.Name, bc.Version, hc.Name, hc.Version))
	}
	if paths := changedPaths("", base.hr.GetValues(), head.hr.GetValues()); len(paths) > 0 {
		out = append(out, "values: "+limitList(paths, 8)+" (spec.values)")
	}
	if head.built.Reused {
		out = append(out, "upgrade.preserveValues: Helm reuses the base release's values under the head's, and the base chart's defaults in place of the head chart's (--reuse-values)")
	}
	if head.built.Reupgrades {
		out = append(out, "upgrade.preserveValues: the values Helm then stores (merged) differ from those helm-controller composes, so every later reconcile finds the release out of sync and upgrades it again: a new revision each time, with the same objects")
	}
	for _, ref := range inputsOf(specOf(p.head), p.head.Namespace) {
		b, h := p.base.Objects[ref], p.head.Objects[ref]
		if reflect.DeepEqual(b, h) {
			continue
		}
		parts := strings.SplitN(ref, "/", 4)
		what := parts[1] + " " + parts[2] + "/" + parts[3]
		switch {
		case parts[1] == "ConfigMap":
			out = append(out, "values: "+limitList(changedPaths("", dataValues(b), dataValues(h)), 8)+" (valuesFrom "+what+")")
		case parts[1] == "Secret":
			out = append(out, "values from "+what+" (valuesFrom; content not shown)")
		default:
			out = append(out, "chart source "+what+" changed")
		}
	}
	if !reflect.DeepEqual(base.hr.Spec.PostRenderers, head.hr.Spec.PostRenderers) {
		out = append(out, "spec.postRenderers")
	}
	bs, hs := specOf(p.base), specOf(p.head)
	var other []string
	for _, k := range unionKeys(bs, hs) {
		switch k {
		case "values", "valuesFrom", "postRenderers":
			continue
		}
		if reflect.DeepEqual(bs[k], hs[k]) {
			continue
		}
		if bv, hv := chartVersion(bs), chartVersion(hs); k == "chart" && bv != hv {
			other = append(other, fmt.Sprintf("spec.chart.spec.version %q → %q", bv, hv))
			continue
		}
		other = append(other, "spec."+k)
	}
	if len(other) > 0 {
		out = append(out, "HelmRelease "+strings.Join(other, ", "))
	}
	var vars []string
	for _, n := range unionKeys(varsMap(p.base), varsMap(p.head)) {
		if p.base.Vars[n] != p.head.Vars[n] {
			from := p.head.Vars[n].From
			if from == "" {
				from = p.base.Vars[n].From + ", removed"
			}
			vars = append(vars, "${"+n+"} ("+from+")")
		}
	}
	if len(vars) > 0 {
		out = append(out, "substitution variables: "+limitList(vars, 8))
	}
	return out
}

// nextOf is what helm-controller does when the head is reconciled after the base: install a
// HelmRelease the head adds, uninstall one it removes, upgrade when the chart's name or
// version, the values or the post-renderers changed, else nothing (an edit helm-controller
// ignores). chartFiles: the files of a chart this repository holds changed; under the same
// version helm-controller does not upgrade for them, and source-controller keeps serving the
// chart it packaged for that version (reconcileStrategy ChartVersion).
// xref: helm-controller internal/reconcile/state.go DetermineReleaseState; source-controller
// internal/helm/chart/builder_local.go Build (the cached chart of the same version).
func nextOf(p treePair, base, head *treeSide, chartFiles bool) *flux.Next {
	switch {
	case base == nil:
		return &flux.Next{Action: flux.NextInstall, Reason: "the head adds the HelmRelease"}
	case head == nil && p.kept != "":
		return &flux.Next{Action: flux.NextNothing, Reason: "the head no longer applies the HelmRelease, but it stays: " + p.kept}
	case head == nil:
		return &flux.Next{Action: "uninstall", Reason: "the head removes the HelmRelease: kustomize-controller deletes it, helm-controller uninstalls its release"}
	case head.hr.Spec.Suspend:
		return &flux.Next{Action: flux.NextNothing, Reason: "the HelmRelease is suspended in the head"}
	}
	bc, hc := base.built.Chart.Metadata, head.built.Chart.Metadata
	if why := targetChange(base, head); why != "" {
		return &flux.Next{Action: flux.NextReinstall, Reason: fmt.Sprintf("the release's target changes (%s): helm-controller uninstalls release %s/%s, then installs %s/%s: every object is deleted and created again",
			why, base.built.Namespace, base.built.Name, head.built.Namespace, head.built.Name)}
	}
	switch {
	case bc.Name != hc.Name || bc.Version != hc.Version:
		return &flux.Next{Action: flux.NextUpgrade, Reason: fmt.Sprintf("the chart changes (%s %s → %s)", hc.Name, bc.Version, hc.Version)}
	case base.built.ConfigDigest != head.built.ConfigDigest:
		return &flux.Next{Action: flux.NextUpgrade, Reason: "the composed values change"}
	case !reflect.DeepEqual(base.hr.Spec.PostRenderers, head.hr.Spec.PostRenderers) || !reflect.DeepEqual(base.hr.Spec.CommonMetadata, head.hr.Spec.CommonMetadata):
		return &flux.Next{Action: flux.NextUpgrade, Reason: "the post-renderers or the common metadata change"}
	case chartFiles:
		return &flux.Next{Action: flux.NextNothing, Reason: fmt.Sprintf("the chart's files change but its version stays %s: helm-controller upgrades for a new chart version or new values, and source-controller keeps serving the chart it packaged for that version; bump the version in Chart.yaml, or set spec.chart.spec.reconcileStrategy: Revision", hc.Version)}
	}
	return &flux.Next{Action: flux.NextNothing, Reason: "neither the chart, the values nor the post-renderers change: helm-controller does not upgrade"}
}

// staleChart says whether source-controller keeps serving the base's chart to the head: a
// chart of the repository whose files changed (the caller knows) under the same version, from
// a HelmChart whose spec does not change (its spec.chart.spec and interval the same: a change
// raises its generation, and source-controller then packages the chart again), under
// reconcileStrategy ChartVersion. source-controller keeps the artifact it packaged for that
// version, and helm-controller's next upgrade (for new values, say) renders it.
// xref: source-controller internal/helm/chart/builder_local.go Build (the cached chart);
// internal/controller/helmchart_controller.go (Force: a new generation).
func staleChart(base, head *treeSide) bool {
	if base == nil || head == nil || !base.hr.HasChartTemplate() || !head.hr.HasChartTemplate() {
		return false
	}
	bs, hs := base.hr.Spec.Chart.Spec, head.hr.Spec.Chart.Spec
	return hs.ReconcileStrategy != "Revision" && reflect.DeepEqual(bs, hs) &&
		base.hr.Spec.Interval == head.hr.Spec.Interval &&
		base.built.Chart.Metadata.Version == head.built.Chart.Metadata.Version
}

// targetChange says how the release a HelmRelease targets changes between the base and the
// head, when it does in a way helm-controller answers by uninstalling the release and
// installing the new one ("" when not): its storage namespace, its namespace, its name, or
// its chart's name when upgrade.chartNameChangeStrategy is Reinstall.
// xref: helm-controller internal/action/verify.go ReleaseTargetChanged;
// internal/controller/helmrelease_controller.go reconcileRelease.
func targetChange(base, head *treeSide) string {
	bc, hc := base.built.Chart.Metadata.Name, head.built.Chart.Metadata.Name
	switch {
	case base.built.Storage != head.built.Storage:
		return fmt.Sprintf("storage namespace %s → %s", base.built.Storage, head.built.Storage)
	case base.built.Namespace != head.built.Namespace:
		return fmt.Sprintf("namespace %s → %s", base.built.Namespace, head.built.Namespace)
	case base.built.Name != head.built.Name:
		return fmt.Sprintf("release name %s → %s", base.built.Name, head.built.Name)
	case bc != hc && head.hr.GetUpgrade().GetChartNameChangeStrategy() == v2.ChartNameChangeStrategyReinstall:
		return fmt.Sprintf("chart %s → %s, upgrade.chartNameChangeStrategy Reinstall", bc, hc)
	}
	return ""
}

// markNotApplied says of every row of a HelmRelease helm-controller will not upgrade that the
// merge does not apply it (the HelmRelease's next reconcile says why).
func markNotApplied(rep *diff.Report) {
	for i := range rep.Objects {
		o := &rep.Objects[i]
		if o.Refusal != nil {
			// No upgrade, so nothing for the API server to refuse.
			o.Refusal = nil
			rep.WillFail--
		}
		for j := range o.Rows {
			r := &o.Rows[j]
			if r.Resolved || r.Why == diff.WhyWillFail {
				r.Resolved, r.Why = false, "helm-controller does not upgrade"
			}
		}
	}
}

// chartPathOf is a HelmRelease's spec.chart.spec.chart.
func chartPathOf(h *fluxtree.HelmRelease) string {
	c, _ := specOf(h)["chart"].(map[string]any)
	cs, _ := c["spec"].(map[string]any)
	return str(cs, "chart")
}

// chartVersion is spec.chart.spec.version ("" when absent).
func chartVersion(spec map[string]any) string {
	c, _ := spec["chart"].(map[string]any)
	cs, _ := c["spec"].(map[string]any)
	return str(cs, "version")
}

func specOf(h *fluxtree.HelmRelease) map[string]any {
	s, _ := h.Object["spec"].(map[string]any)
	return s
}

func varsMap(h *fluxtree.HelmRelease) map[string]any {
	out := map[string]any{}
	for n := range h.Vars {
		out[n] = true
	}
	return out
}

// dataValues is a values ConfigMap's data, each key's YAML parsed (what valuesFrom reads).
func dataValues(o map[string]any) map[string]any {
	data, _ := o["data"].(map[string]any)
	out := map[string]any{}
	for k, v := range data {
		s, _ := v.(string)
		var parsed any
		if err := sigsyaml.Unmarshal([]byte(s), &parsed); err == nil {
			out[k] = parsed
		} else {
			out[k] = s
		}
	}
	return out
}

// changedPaths lists the paths (".a.b") at which two values trees differ.
func changedPaths(prefix string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		for _, k := range unionKeys(am, bm) {
			out = append(out, changedPaths(prefix+"."+k, am[k], bm[k])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	if prefix == "" {
		prefix = "."
	}
	return []string{prefix}
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// limitList joins items, at most n of them, saying how many more there are.
func limitList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// secretValues are the values a HelmRelease's render took from Secrets: its valuesFrom
// Secrets' values (each leaf of a values YAML) and its substitution variables from Secrets.
// Short values (under 4 bytes) are left out: they would hide unrelated fields.
func secretValues(h *fluxtree.HelmRelease) []string {
	if h == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	for _, s := range h.SecretVars {
		add(s)
	}
	spec := specOf(h)
	vf, _ := spec["valuesFrom"].([]any)
	for _, v := range vf {
		m, _ := v.(map[string]any)
		if str(m, "kind") != "Secret" {
			continue
		}
		o := h.Objects["/Secret/"+h.Namespace+"/"+str(m, "name")]
		for _, s := range secretData(o) {
			add(s)
			var parsed any
			if sigsyaml.Unmarshal([]byte(s), &parsed) == nil {
				leaves(parsed, add)
			}
		}
	}
	return out
}

// secretData is a Secret's data decoded, with stringData.
func secretData(o map[string]any) []string {
	var out []string
	data, _ := o["data"].(map[string]any)
	for _, v := range data {
		s, _ := v.(string)
		if dec, err := decodeB64(s); err == nil {
			out = append(out, dec)
		}
	}
	sd, _ := o["stringData"].(map[string]any)
	for _, v := range sd {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// leaves calls add with each scalar of a values tree, as text.
func leaves(v any, add func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			leaves(x, add)
		}
	case []any:
		for _, x := range v {
			leaves(x, add)
		}
	case string:
		add(v)
	case nil:
	default:
		add(fmt.Sprint(v))
	}
}

// redactSecretValues hides, in every row and view of rep, a value that holds one of secrets
// (a value that came from a Secret, wherever the chart put it): the row keeps its sizes only.
func redactSecretValues(rep *diff.Report, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	holds := func(v any) bool {
		if v == nil {
			return false
		}
		s := valueText(v)
		for _, x := range secrets {
			if strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	size := func(v any) *int {
		if v == nil {
			return nil
		}
		n := len(valueText(v))
		return &n
	}
	for i := range rep.Objects {
		o := &rep.Objects[i]
		for j := range o.Rows {
			r := &o.Rows[j]
			if r.Redacted || !holds(r.Chart) && !holds(r.Cluster) {
				continue
			}
			r.Redacted, r.ChartBytes, r.ClusterBytes, r.Chart, r.Cluster = true, size(r.Chart), size(r.Cluster), nil, nil
		}
		if o.View != nil {
			o.View.Chart, _ = redactTree(o.View.Chart, holds).(map[string]any)
			o.View.Live, _ = redactTree(o.View.Live, holds).(map[string]any)
		}
	}
	for i := range rep.Prune {
		if v := rep.Prune[i].View; v != nil {
			v.Live, _ = redactTree(v.Live, holds).(map[string]any)
		}
	}
}

// valueText is a row's value as text: a string itself, anything else as its JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// redactTree replaces each string of v that holds a Secret's value.
func redactTree(v any, holds func(any) bool) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = redactTree(x, holds)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactTree(x, holds)
		}
		return out
	case string:
		if holds(v) {
			return fmt.Sprintf("(redacted: %d bytes from a Secret)", len(v))
		}
	}
	return v
}

func decodeB64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}
