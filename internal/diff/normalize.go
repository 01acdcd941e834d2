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

	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/helm-drift/helm-drift/internal/normalize/defaulting"
)

// normalize returns the chart's side of t to compare: what the API server would store for it,
// told by a server-side dry-run create (Server, Auto) or reproduced offline with the API
// server's own decoding and defaulting code (Offline), with what the server allocated taken
// from the live object; and the mode used, with the reason when it is not the one asked for.
func (m *measure) normalize(ctx context.Context, t *target, tm kyaml.TypeMeta, desired map[string]any) (map[string]any, string, error) {
	group, version := splitAPIVersion(t.ob.APIVersion)
	mode := string(Offline)
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
			out, err := m.cl.DryRunCreate(ctx, normalize.ForDryRun(t.ob.Kind, desired), tempName())
			if err == nil {
				// What the dry-run leaves from the chart's own text (the addresses and ports it
				// states) is judged as the server would store it, never as written (a null).
				var written map[string]any
				if normalize.UnallocateReads(t.ob.Kind) {
					written, _, _ = m.written(ctx, t, tm, desired, string(Server))
				}
				return normalize.Allocated(t.ob.Kind, normalize.Unallocate(t.ob.Kind, out, written, t.ob.Name), t.live), string(Server), nil
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

// offline reproduces the API server's write of desired (see written), with what the server
// allocated taken from the live object.
func (m *measure) offline(ctx context.Context, t *target, tm kyaml.TypeMeta, desired map[string]any, mode string) (map[string]any, string, error) {
	written, mode, err := m.written(ctx, t, tm, desired, mode)
	if err != nil {
		return nil, "", err
	}
	return normalize.Allocated(t.ob.Kind, written, t.live), mode, nil
}

// written returns desired as the API server would store it, offline: a built-in kind through
// its typed struct, the scheme's defaulting and conversions (internal/normalize/defaulting; a CRD's
// schema that the live CRD holds value for value is the live one, see CRDAgainst); a custom
// resource through its CRD's structural schema (pruning, nullable, defaults). mode comes back
// with a note when that could not be done: the object is then compared as the chart wrote it.
func (m *measure) written(ctx context.Context, t *target, tm kyaml.TypeMeta, desired map[string]any, mode string) (map[string]any, string, error) {
	if out, known, err := defaulting.CRDAgainst(desired, t.live); known {
		if err != nil {
			return desired, mode + " (not defaulted: " + err.Error() + ")", nil
		}
		return out, mode, nil
	}
	if normalize.BuiltIn(tm) {
		return desired, mode, nil // a built-in group this Kubernetes version does not define
	}
	schema, err := m.crdSchema(ctx, t)
	switch {
	case apierrors.IsNotFound(err):
		return desired, mode, nil // no CRD defines it: nothing to default
	case apierrors.IsForbidden(err):
		return desired, mode + " (CRD schema unreadable: its defaults may show as CLUSTER-ONLY)", nil
	case err != nil:
		return nil, "", err
	}
	err = schema.err
	var out map[string]any
	if err == nil {
		out, err = defaulting.CustomResource(desired, schema.s)
	}
	if err != nil {
		return desired, mode + " (CRD schema not applied: " + err.Error() + ")", nil
	}
	return out, mode, nil
}

// crdSchema is the openAPIV3Schema of t's kind and version, read and made ready once per
// measurement (not once per object: making it ready finds it by its JSON text). The error
// returned is the read's; one of making it ready is the schema's own.
func (m *measure) crdSchema(ctx context.Context, t *target) (readySchema, error) {
	group, version := splitAPIVersion(t.ob.APIVersion)
	return m.crdSchemas.Get(group+"/"+version+"/"+t.ob.Kind, func() (readySchema, error) {
		raw, err := m.cl.CRDSchema(ctx, group, version, t.ob.Kind)
		if err != nil {
			return readySchema{}, err
		}
		s, err := defaulting.NewSchema(raw)
		return readySchema{s, err}, nil
	})
}

// readySchema is a CRD schema made ready, or why it could not be (nil and no error: no schema).
type readySchema struct {
	s   *defaulting.Schema
	err error
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
