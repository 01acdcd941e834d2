package diff

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/drift"
)

// normalize returns the chart's side of t to compare: the API server's answer to a dry-run
// create (Server, Auto) or the desired object with its CRD's schema defaults (Offline), and
// the mode used, with the reason when it is not the one asked for.
func (m *measure) normalize(ctx context.Context, t *target, tm kyaml.TypeMeta, desired map[string]any) (map[string]any, string, error) {
	group, version := splitAPIVersion(t.ob.APIVersion)
	mode := Offline
	if m.in.Normalize == Server || m.in.Normalize == Auto {
		res, err := m.cl.Resource(group, version, t.ob.Kind)
		if err != nil {
			return nil, "", err
		}
		m.mu.Lock()
		why := m.dryRun[res]
		m.mu.Unlock()
		if fixedName[t.ob.Kind] {
			why = "offline (a " + t.ob.Kind + "'s name is fixed: no dry-run under another name)"
		}
		if why == "" {
			out, err := m.cl.DryRunCreate(ctx, drift.ForDryRun(t.ob.Kind, desired), tempName())
			if err == nil {
				return drift.Unallocate(t.ob.Kind, out, desired, t.ob.Name), Server, nil
			}
			var status apierrors.APIStatus
			isStatus := errors.As(err, &status)
			if isStatus && t.ob.Kind == "Secret" && group == "" && !apierrors.IsForbidden(err) {
				// The API server's message may quote a value (an Invalid error does): say only
				// what kind of refusal it was.
				err = fmt.Errorf("dry-run create refused: %d %s (the message is not shown for a Secret)", status.Status().Code, apierrors.ReasonForError(err))
			}
			if m.in.Normalize == Server || !isStatus {
				return nil, "", m.explain(err, "create (Kubernetes authorises a dry-run like the real write; or use --normalize offline)", group, version, t.ob.Kind, t.id.Namespace)
			}
			if !apierrors.IsForbidden(err) {
				// Not the kind's fault: this object only. The reason, never the message, which
				// may quote a value.
				return m.offline(ctx, t, tm, desired, fmt.Sprintf("offline (dry-run refused: %d %s)", status.Status().Code, apierrors.ReasonForError(err)))
			}
			why = fmt.Sprintf("offline (dry-run forbidden: no create on %s)", res)
			m.mu.Lock()
			m.dryRun[res] = why
			m.mu.Unlock()
		}
		mode = why
	}
	return m.offline(ctx, t, tm, desired, mode)
}

// offline applies the defaults a CRD's schema declares to a custom resource; built-in kinds
// are left to the defaults table drift.Compare consults.
func (m *measure) offline(ctx context.Context, t *target, tm kyaml.TypeMeta, desired map[string]any, mode string) (map[string]any, string, error) {
	if drift.BuiltIn(tm) {
		return desired, mode, nil
	}
	group, version := splitAPIVersion(t.ob.APIVersion)
	schema, err := m.crdSchemas.get(group+"/"+version+"/"+t.ob.Kind, func() (map[string]any, error) {
		return m.cl.CRDSchema(ctx, group, version, t.ob.Kind)
	})
	switch {
	case apierrors.IsNotFound(err):
		return desired, mode, nil // no CRD defines it: nothing to default
	case apierrors.IsForbidden(err):
		return desired, mode + " (CRD schema unreadable: its defaults may show as CLUSTER-ONLY)", nil
	case err != nil:
		return nil, "", err
	}
	return drift.SchemaDefaults(desired, schema), mode, nil
}

// fixedName are the kinds whose name the API server checks against their spec: they cannot be
// created under a temporary name.
var fixedName = map[string]bool{"CustomResourceDefinition": true, "APIService": true}

func splitAPIVersion(apiVersion string) (group, version string) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "", apiVersion
	}
	return group, version
}

// tempName is a name no object has: valid as a DNS-1035 label, so any kind accepts it.
func tempName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "helm-drift-" + hex.EncodeToString(b)
}
