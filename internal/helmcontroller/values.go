package helmcontroller

import (
	"context"
	"errors"
	"fmt"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Getter reads one object as unstructured content; an object that does not exist is a
// Kubernetes NotFound error. *live.Client implements it; so does a stream with a cluster
// behind it.
type Getter interface {
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
}

// Values composes the HelmRelease's values exactly as helm-controller does: each valuesFrom
// reference in order (ConfigMap or Secret, valuesKey, targetPath, optional), then spec.values
// over them, by fluxcd/pkg/chartutil's ChartValuesFromReferences, helm-controller's own code.
// Its errors name the reference and the reason, never the content.
// xref: helm-controller internal/controller/helmrelease_controller.go reconcileRelease
// (chartutil.ChartValuesFromReferences).
func Values(ctx context.Context, get Getter, hr *v2.HelmRelease) (map[string]any, error) {
	vals, err := chartutil.ChartValuesFromReferences(ctx, logr.Discard(), getClient{get: get}, hr.Namespace, hr.GetValues(), hr.Spec.ValuesFrom...)
	if err != nil {
		var ref *chartutil.ErrValuesReference
		if errors.As(err, &ref) {
			return nil, fmt.Errorf("valuesFrom %s %s key %s: %s (content withheld)", ref.Kind, ref.Name, ref.Key, reasonOf(ref.Reason))
		}
		return nil, fmt.Errorf("valuesFrom: %w", err)
	}
	return vals, nil
}

// ConfigDigest is the digest helm-controller records as status.lastAttemptedConfigDigest and
// in its history snapshots for these values.
// xref: fluxcd/pkg/chartutil digest.go DigestValues.
func ConfigDigest(vals map[string]any) string {
	return chartutil.DigestValues(digest.Canonical, vals).String()
}

func reasonOf(r chartutil.ErrValuesRefReason) string {
	switch {
	case r == nil:
		return "unknown error"
	default:
		return r.Error()
	}
}

// getClient is the controller-runtime client ChartValuesFromReferences asks: it only ever
// calls Get, for a ConfigMap or a Secret.
type getClient struct {
	client.Client
	get Getter
}

// Get implements client.Reader for ConfigMaps and Secrets. A Secret read from a stream may
// carry stringData; it is merged into data as the API server would.
func (c getClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	var kind string
	switch obj.(type) {
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	case *corev1.Secret:
		kind = "Secret"
	default:
		return fmt.Errorf("valuesFrom: unsupported kind %T", obj)
	}
	m, err := c.get.Get(ctx, "", "v1", kind, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if kind == "Secret" {
		cp := make(map[string]any, len(m))
		for k, v := range m {
			cp[k] = v
		}
		m = cp
		normalize.MergeStringData(m)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		return fmt.Errorf("%s %s: %w", kind, key, err)
	}
	return nil
}
