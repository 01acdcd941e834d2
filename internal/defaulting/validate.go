package defaulting

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	typed, _, err := decoder.Decode(data, &gvk, nil)
	if err != nil {
		return nil, true, decodeError(gvk, err)
	}
	scheme.Default(typed)
	internal, err := scheme.ConvertToVersion(typed, schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		return nil, true, fmt.Errorf("%s: convert to the internal version: %w", gvk, err)
	}
	return internal, true, nil
}
