package diff

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/helm-drift/helm-drift/internal/normalize/defaulting"
)

// Refusal is the API server's refusal of the write an upgrade would make to one object: a
// validation error (an immutable field, a schema the object no longer fits), an admission
// webhook's or policy's denial, a full quota. The upgrade fails on it.
type Refusal struct {
	// Reason is the API server's (Invalid, Forbidden, BadRequest) and Code its HTTP status.
	Reason string `json:"reason"`
	Code   int32  `json:"code"`
	// Field names the fields refused ("spec.selector"), when the server says.
	Field string `json:"field,omitempty"`
	// Message is what the server says, its quoted values left out; for a Secret only the
	// reason.
	Message string `json:"message"`
}

// rbacDenied tells an authorisation failure (the user may not make the dry-run) from an
// admission refusal, which is also a 403.
var rbacDenied = regexp.MustCompile(`(User|ServiceAccount|Group) "[^"]*" cannot [a-z]+ resource`)

// refusalOf reads a dry-run's error as the API server's refusal of the write; nil when it is
// no refusal (a permission the user lacks, a timeout, a server error): the probe then says
// nothing.
func refusalOf(err error, kind string) *Refusal {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return nil
	}
	s := st.Status()
	switch s.Reason {
	case metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest:
	case metav1.StatusReasonForbidden:
		if rbacDenied.MatchString(s.Message) {
			return nil
		}
	default:
		return nil
	}
	r := &Refusal{Reason: string(s.Reason), Code: s.Code}
	var fields, says []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Field != "" && !slices.Contains(fields, c.Field) {
				fields = append(fields, c.Field)
			}
			if m := withoutValue(c.Message); m != "" {
				says = append(says, strings.TrimSpace(c.Field+": "+m))
			}
		}
	}
	r.Field = strings.Join(fields, ", ")
	switch {
	case kind == "Secret":
		r.Message = fmt.Sprintf("%d %s (the message is not shown for a Secret)", s.Code, s.Reason)
	case len(says) > 0 && s.Reason == metav1.StatusReasonInvalid:
		r.Message = strings.Join(says, "; ")
	default:
		r.Message = s.Message
	}
	return r
}

// invalidValue is a validation message's quoted value: "Invalid value: v1.LabelSelector{...}: ".
var invalidValue = regexp.MustCompile(`^Invalid value: .*?: `)

// withoutValue drops the value a validation message quotes, keeping what is wrong with it:
// "Invalid value: \"x\": field is immutable" → "field is immutable".
func withoutValue(msg string) string {
	if i := strings.LastIndex(msg, ": "); strings.HasPrefix(msg, "Invalid value: ") && i >= 0 {
		return msg[i+2:]
	}
	return invalidValue.ReplaceAllString(msg, "")
}

// probe asks the API server, with a dry run, whether it takes the write the upgrade would make
// to t: an apply of the render over the live object, or the creation of a missing one under
// its own name. Only for a new render (diff upgrade, diff helmrelease) in the server and auto
// modes, and only when the upgrade writes the object (a row it resolves or the chart moved);
// a kind whose dry-run the user may not make is not probed.
func (m *measure) probe(ctx context.Context, t *target, o *Object, desired map[string]any) (asked bool) {
	if t.crd {
		return true // crds/ are written by their own policy, not by the upgrade
	}
	if !m.in.Rendered || (m.in.Normalize != Server && m.in.Normalize != Auto) || o.Refused != "" {
		return false
	}
	if !m.upgradeWrites(o) {
		return true // nothing to ask: the upgrade does not write it
	}
	group, version := splitAPIVersion(t.ob.APIVersion)
	res, err := m.cl.Resource(group, version, t.ob.Kind)
	if err != nil {
		return false
	}
	m.mu.Lock()
	skip := m.probeDenied[res]
	m.mu.Unlock()
	if skip {
		return false
	}
	if o.Missing {
		_, err = m.cl.DryRunCreate(ctx, desired, t.ob.Name)
	} else {
		_, err = m.cl.DryRunApply(ctx, desired)
	}
	if err == nil {
		return true
	}
	if apierrors.IsForbidden(err) && rbacDenied.MatchString(err.Error()) {
		m.mu.Lock()
		m.probeDenied[res] = true
		m.mu.Unlock()
		return false
	}
	if r := refusalOf(err, t.ob.Kind); r != nil {
		o.Refusal = r
		for i := range o.Rows {
			o.Rows[i].Resolved, o.Rows[i].Why = false, WhyWillFail
		}
	}
	return true
}

// upgradeWrites reports whether the upgrade writes o: it creates it, or a row is one the
// upgrade resolves or the chart moved; for a HelmRelease, only when its next reconcile
// upgrades or installs (a drift correction writes the stored manifest, not the render).
func (m *measure) upgradeWrites(o *Object) bool {
	if n := m.in.Next; n != nil && n.Action != flux.NextUpgrade && n.Action != flux.NextInstall {
		return false // the HelmRelease's next reconcile does not write the render
	}
	writes := o.Missing
	for _, r := range o.Rows {
		writes = writes || r.Resolved || r.Moved == MovedChart || r.Moved == MovedBoth
	}
	return writes
}

// validateOffline runs, without the cluster, the API server's own update validation of the
// kinds whose fields an update may not change (internal/normalize/defaulting ValidateUpdate) on the
// render applied over the live object: a change the server would refuse (an immutable field,
// a StatefulSet's volumeClaimTemplates, a claim that asks for less) is WILL-FAIL. For a new
// render measured offline, or where the dry-run probe may not be made. A custom resource is
// judged by its CRD's schema and CEL rules (defaulting.ValidateCustomResourceUpdate). What it
// cannot see: admission webhooks and policies, quotas.
func (m *measure) validateOffline(ctx context.Context, t *target, tm kyaml.TypeMeta, o *Object, desired map[string]any) {
	if !m.in.Rendered || o.Missing || o.Refused != "" || o.Refusal != nil || t.live == nil || !m.upgradeWrites(o) {
		return
	}
	// The render as written (defaulted, not given what the server allocated): a field the chart
	// states over what the live object holds is the change the server judges.
	written, _, err := m.written(ctx, t, tm, desired, string(Offline))
	if err != nil {
		return
	}
	next := applyOver(t.live, written, t.ob.Kind)
	refused, known, err := defaulting.ValidateUpdate(next, t.live)
	if !known && !normalize.BuiltIn(tm) {
		refused, err = m.validateCustomResource(ctx, t, next)
	}
	if err != nil || len(refused) == 0 {
		return
	}
	willFail(o, refused, "the API server's update validation, run here")
}

// willFail makes o WILL-FAIL on the fields the offline update validation refused (how says
// what was validated): the upgrade fails on it, so none of its rows is resolved by it.
func willFail(o *Object, refused []defaulting.Refused, how string) {
	var fields, says []string
	for _, r := range refused {
		if !slices.Contains(fields, r.Field) {
			fields = append(fields, r.Field)
		}
		says = append(says, r.Field+": "+r.Detail)
	}
	o.Refusal = &Refusal{Reason: string(metav1.StatusReasonInvalid), Code: 422, Field: strings.Join(fields, ", "),
		Message: strings.Join(says, "; ") + " (offline: " + how + ")"}
	for i := range o.Rows {
		o.Rows[i].Resolved, o.Rows[i].Why = false, WhyWillFail
	}
}

// validateCustomResource runs the API server's update validation of a custom resource
// offline: its CRD version's schema and CEL rules, as the live CRD states them (a CRD the same
// upgrade changes is judged by its current schema).
func (m *measure) validateCustomResource(ctx context.Context, t *target, next map[string]any) ([]defaulting.Refused, error) {
	schema, err := m.crdSchema(ctx, t)
	if err == nil {
		err = schema.err
	}
	if err != nil {
		return nil, err
	}
	return defaulting.ValidateCustomResourceUpdate(ctx, next, t.live, schema.s)
}

// applyOver is the object an apply of desired leaves over live: desired's fields over the live
// object's, maps merged key by key, lists as desired states them. A Service that states a
// clusterIP and not clusterIPs gets clusterIPs from it, as the API server fills them in.
// xref: k8s.io/kubernetes pkg/registry/core/service/strategy.go (normalizeClusterIPs).
func applyOver(live, desired map[string]any, kind string) map[string]any {
	out := mergeMaps(live, desired)
	if kind == "Service" {
		spec, _ := out["spec"].(map[string]any)
		dspec, _ := desired["spec"].(map[string]any)
		if ip, ok := dspec["clusterIP"].(string); ok && ip != "" && dspec["clusterIPs"] == nil && spec != nil {
			spec["clusterIPs"] = []any{ip}
		}
	}
	md, _ := out["metadata"].(map[string]any)
	if md != nil {
		delete(md, "managedFields")
	}
	return out
}

func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = mergeMaps(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}
