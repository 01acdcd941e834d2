package action

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/live"
)

// SelfState is what the render of the self pair needs to know of the cluster.
type SelfState struct {
	// Suspend: render the HelmRelease suspended (the bracket is open, or opens now).
	Suspend bool
	// Adopted: the HelmRelease exists and is active, so helm-controller writes the release:
	// the pair is kept and the guard armed, as the hand-over left them.
	Adopted bool
	// Warning says why the safe side was chosen, when the cluster could not be asked.
	Warning string
}

// Bracket asks the cluster of conn for the self state of release in namespace: the
// HelmRelease is rendered suspended on an install, whenever it does not exist in the cluster
// yet and while it is suspended there (a CLI write during the bracket keeps it open); an
// unreachable cluster is the safe side (suspended, with a warning). Flux CRDs absent from a
// cluster that answers is an error, and so is the guard on a cluster that cannot enforce it.
func Bracket(conn *Connection, namespace, release string, install, guard bool) (SelfState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*conn.timeout())
	defer cancel()
	cfg, err := conn.Configuration()
	if err != nil {
		return lookupFailed(namespace, release, err), nil
	}
	cl, err := cfg.Live(ctx)
	if err != nil {
		return lookupFailed(namespace, release, err), nil
	}
	if err := GuardServed(guard, cl.Server, cl.Version); err != nil {
		return SelfState{}, err
	}
	return bracket(ctx, cl, cl.Server, namespace, release, install)
}

// GuardServed refuses the CLI guard on a cluster older than Kubernetes 1.30, which has no GA
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1).
func GuardServed(guard bool, server, gitVersion string) error {
	if !guard {
		return nil
	}
	v, err := kversion.ParseGeneric(gitVersion)
	if err != nil || v.AtLeast(kversion.MajorMinor(1, 30)) {
		return nil // a version it cannot read is left to the API server to refuse
	}
	return fmt.Errorf("--self: the CLI guard is a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.30 or later), and the cluster %s runs %s: upgrade the cluster, or render without the guard (--self-guard=false; then nothing stops a helm upgrade by the CLI from writing a revision that helm-controller's next reconcile reverts)", server, gitVersion)
}

// lookupFailed chooses the safe side when the HelmRelease could not be looked up.
func lookupFailed(namespace, release string, err error) SelfState {
	return SelfState{Suspend: true, Warning: fmt.Sprintf("--self: could not look up HelmRelease %s/%s (%v): rendering it suspended, the safe side", namespace, release, err)}
}

// helmReleaseGetter is what the bracket asks the cluster; *live.Client implements it.
type helmReleaseGetter interface {
	Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error)
}

// bracket decides the self state, given a cluster that answers.
func bracket(ctx context.Context, cl helmReleaseGetter, server, namespace, release string, install bool) (SelfState, error) {
	hr, err := cl.Get(ctx, flux.HelmReleaseGroup, flux.HelmReleaseVersion, flux.HelmReleaseKind, namespace, release)
	switch {
	case errors.Is(err, live.ErrNotServed):
		return SelfState{}, fmt.Errorf("--self: the cluster %s has no Flux CRDs (HelmRelease is not served): install Flux (source-controller and helm-controller) first", server)
	case apierrors.IsNotFound(err):
		return SelfState{Suspend: true}, nil
	case err != nil:
		return lookupFailed(namespace, release, err), nil
	}
	suspended, _, _ := unstructured.NestedBool(hr, "spec", "suspend")
	if install || suspended {
		return SelfState{Suspend: true}, nil
	}
	return SelfState{Adopted: true}, nil
}
