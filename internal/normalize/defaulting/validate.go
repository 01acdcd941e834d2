package defaulting

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// Refused is one field the API server's update validation refuses.
type Refused struct {
	// Field is the field's path ("spec.selector"); Detail what is wrong, never its value.
	Field, Detail string
}

// ValidateUpdate runs, offline, the API server's own update validation of the kinds whose
// fields an update may not change (Deployment, StatefulSet, DaemonSet, Job, CronJob, Service,
// PersistentVolumeClaim) on next over live: next is the object as the update would leave it
// (the render over the live object, as an apply does). Only the refusals of a change are
// returned (a field that is immutable, may not change, or may not shrink), not the rest of the
// object's validation, which the server's own filling-in on update would answer. ok is false
// for any other kind.
//
// xref: k8s.io/kubernetes pkg/registry/apps/deployment/strategy.go ValidateUpdate (and the
// other kinds' strategies), which call these functions.
func ValidateUpdate(next, live map[string]any) (refused []Refused, ok bool, err error) {
	n, known, err := internalOf(next)
	if !known || err != nil {
		return nil, known, err
	}
	o, _, err := internalOf(live)
	if err != nil {
		return nil, true, err
	}
	pod := corevalidation.PodValidationOptions{}
	var errs field.ErrorList
	switch nt := n.(type) {
	case *apps.Deployment:
		errs = appsvalidation.ValidateDeploymentUpdate(nt, o.(*apps.Deployment), pod)
	case *apps.StatefulSet:
		errs = appsvalidation.ValidateStatefulSetUpdate(nt, o.(*apps.StatefulSet), appsvalidation.StatefulSetValidationOptions{}, pod)
	case *apps.DaemonSet:
		errs = appsvalidation.ValidateDaemonSetUpdate(nt, o.(*apps.DaemonSet), pod)
	case *batch.Job:
		errs = batchvalidation.ValidateJobUpdate(nt, o.(*batch.Job), batchvalidation.JobValidationOptions{PodValidationOptions: pod})
	case *batch.CronJob:
		errs = batchvalidation.ValidateCronJobUpdate(nt, o.(*batch.CronJob), pod)
	case *core.Service:
		errs = corevalidation.ValidateServiceUpdate(nt, o.(*core.Service))
	case *core.PersistentVolumeClaim:
		errs = corevalidation.ValidatePersistentVolumeClaimUpdate(nt, o.(*core.PersistentVolumeClaim), corevalidation.PersistentVolumeClaimSpecValidationOptions{})
	default:
		return nil, false, nil
	}
	for _, e := range errs {
		if changeRefused(e) {
			refused = append(refused, Refused{Field: e.Field, Detail: e.Detail})
		}
	}
	return refused, true, nil
}

// changeRefused tells a refusal of the change itself from the rest of an object's validation.
func changeRefused(e *field.Error) bool {
	d := strings.ToLower(e.Detail)
	switch {
	case strings.Contains(d, "immutable"), strings.Contains(d, "may not change"), strings.Contains(d, "can not be less"),
		strings.Contains(d, "cannot be less"), strings.Contains(d, "updates to statefulset spec for fields other than"):
		return true
	}
	return e.Type == field.ErrorTypeForbidden && strings.Contains(d, "spec is immutable")
}

// internalOf decodes obj into its typed struct, defaults it and converts it to the internal
// version the validation functions take. known is false for a kind the scheme does not know.
func internalOf(obj map[string]any) (runtime.Object, bool, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, nil
	}
	gvk := gv.WithKind(kind)
	if !scheme.Recognizes(gvk) {
		return nil, false, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, true, fmt.Errorf("%s: encode: %w", kind, err)
	}
	typed, err := decodeTyped(data, gvk)
	if err != nil {
		return nil, true, decodeError(gvk, err)
	}
	scheme.Default(typed)
	// Unsafe (no copy of typed first): typed is this function's own and not used again.
	internal, err := scheme.UnsafeConvertToVersion(typed, schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		return nil, true, fmt.Errorf("%s: convert to the internal version: %w", gvk, err)
	}
	return internal, true, nil
}

// crValidation is a CRD version's validation: the OpenAPI validator and the CEL rules
// compiled.
type crValidation struct {
	schema apiextensionsvalidation.SchemaValidator
	cel    *cel.Validator
}

// validator makes the schema's validation, once.
func (c *Schema) validator() (*crValidation, error) {
	c.validateOnce.Do(func() {
		validator, _, err := apiextensionsvalidation.NewSchemaValidator(c.internal)
		if err != nil {
			c.validateErr = fmt.Errorf("CRD schema: %w", err)
			return
		}
		c.validation = &crValidation{schema: validator, cel: cel.NewValidator(c.structural, true, celconfig.PerCallLimit)}
	})
	return c.validation, c.validateErr
}

// ValidateCustomResourceUpdate runs, offline, the API server's update validation of a custom
// resource against its CRD version's openAPIV3Schema: the schema (types, enums, formats,
// bounds, required fields) and its x-kubernetes-validations CEL rules, transition rules
// (self == oldSelf) included, with ratcheting, as the server applies it: a value the update
// leaves as it was is not judged again. next is the object as the update would leave it, live
// the stored one. Each Refused names the field and says what is wrong, never the value.
//
// xref: k8s.io/apiextensions-apiserver pkg/registry/customresource/strategy.go ValidateUpdate.
func ValidateCustomResourceUpdate(ctx context.Context, next, live map[string]any, sch *Schema) ([]Refused, error) {
	if sch == nil {
		return nil, nil
	}
	v, err := sch.validator()
	if err != nil {
		return nil, err
	}
	// Both as the API server decodes them (whole numbers int64), so that ratcheting, which
	// compares old and new values, sees an unchanged number as unchanged.
	if next, err = asDecoded(next); err != nil {
		return nil, err
	}
	if live, err = asDecoded(live); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	correlated := common.NewCorrelatedObject(next, live, &model.Structural{Structural: sch.structural})
	errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(nil, next, live, v.schema, apiextensionsvalidation.WithRatcheting(correlated))...)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(ctx, nil, sch.structural, next, live, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
		errs = append(errs, celErrs...)
	}
	var refused []Refused
	for _, e := range errs {
		refused = append(refused, Refused{Field: e.Field, Detail: withoutBadValue(e)})
	}
	return refused, nil
}

// asDecoded is obj encoded and decoded again as JSON.
func asDecoded(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// withoutBadValue is a field error's message without the value it quotes.
func withoutBadValue(e *field.Error) string {
	if e.Detail == "" {
		return e.Type.String()
	}
	return e.Type.String() + ": " + e.Detail
}
