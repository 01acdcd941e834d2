package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

// Removal is what handback and uninstall removed.
type Removal struct {
	// Removed names what went, as "HelmRelease ns/app, OCIRepository ns/app and the CLI guard".
	Removed string
	// Installed: the release is (still) installed.
	Installed bool
	// Info is what the uninstall of the release said, if anything.
	Info string
}

// Handback suspends the HelmRelease and removes the pair, the values Secret and the CLI guard,
// leaving the release to the Helm CLI.
func (s *Self) Handback(ctx context.Context, name string) (*Removal, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	removed, err := s.removePair(ctx, c, name)
	if err != nil {
		return nil, err
	}
	_, err = action.NewStatus(c.helm).Run(name)
	return &Removal{Removed: removed, Installed: !errors.Is(err, driver.ErrReleaseNotFound)}, nil
}

// Uninstall removes the pair first, then uninstalls the release: "helm uninstall" alone leaves
// the pair once it is handed over (helm.sh/resource-policy: keep), and an active HelmRelease
// would install the release again. The release must exist: nothing is removed otherwise.
func (s *Self) Uninstall(ctx context.Context, name string) (*Removal, error) {
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	if _, err := action.NewStatus(c.helm).Run(name); err != nil {
		return nil, ReleaseError(s.Namespace, name, err)
	}
	removed, err := s.removePair(ctx, c, name)
	if err != nil {
		return nil, err
	}
	un := action.NewUninstall(c.helm)
	un.DisableHooks, un.Timeout = s.NoHooks, s.Timeout
	res, err := un.Run(name)
	if err != nil {
		return nil, fmt.Errorf("the pair is removed, but uninstalling release %s/%s failed (run helm uninstall %s -n %s): %w", s.Namespace, name, name, s.Namespace, err)
	}
	r := &Removal{Removed: removed}
	if res != nil {
		r.Info = strings.TrimSpace(res.Info)
	}
	return r, nil
}

// removePair suspends the HelmRelease, lifts the CLI guard, then deletes the HelmRelease, its
// OCIRepository, the values Secret and the resumer's cluster-wide role, waiting for each Flux
// object to be gone; it says what it removed. A HelmRelease already gone (deleted by hand) is no
// reason to leave the rest: the guard would refuse the CLI with nobody else to write the
// release. With none of them present the CLI owns the release already, and that is an error.
func (s *Self) removePair(ctx context.Context, c *selfClients, name string) (string, error) {
	hrs := c.dynamic.Resource(flux.HelmReleases).Namespace(s.Namespace)
	hr, err := hrs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		hr = nil
	case err != nil:
		return "", err
	}
	secret := name + "-values"
	var removed []string
	if hr != nil {
		secret = valuesSecretOf(hr, name)
		// Suspended first: helm-controller does not uninstall a suspended HelmRelease it deletes.
		if _, err := hrs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{FieldManager: "helm-drift"}); err != nil {
			return "", fmt.Errorf("suspend HelmRelease %s/%s: %w", s.Namespace, name, err)
		}
	}
	// Then the CLI guard, which refuses the CLI's deletes of the release's objects (the pair is
	// one of them); with the HelmRelease suspended, nobody writes the release meanwhile.
	adm := c.kube.AdmissionregistrationV1()
	guard := selfmanaged.GuardName(s.Namespace, name)
	guarded := false
	for _, b := range selfmanaged.GuardBindings(s.Namespace, name) {
		err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s (the CLI guard): %w", b.Name, err)
		}
		guarded = guarded || err == nil
	}
	err = adm.ValidatingAdmissionPolicies().Delete(ctx, guard, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete ValidatingAdmissionPolicy %s (the CLI guard): %w", guard, err)
	}
	guarded = guarded || err == nil
	if guarded {
		if err := s.waitGuardLifted(ctx, c, name); err != nil {
			return "", err
		}
	}
	if hr != nil {
		if err := hrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete HelmRelease %s/%s: %w", s.Namespace, name, err)
		}
		if err := s.waitGone(ctx, c, flux.HelmReleases, name, "helm-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "HelmRelease "+s.Namespace+"/"+name)
	}
	switch err := c.dynamic.Resource(flux.OCIRepositories).Namespace(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); {
	case err == nil:
		if err := s.waitGone(ctx, c, flux.OCIRepositories, name, "source-controller"); err != nil {
			return "", err
		}
		removed = append(removed, "OCIRepository "+s.Namespace+"/"+name)
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("delete OCIRepository %s/%s: %w", s.Namespace, name, err)
	}
	// The values Secret: the one the HelmRelease names, or, without it, the default one if
	// "self resume" wrote it (it carries the self label).
	secrets := c.kube.CoreV1().Secrets(s.Namespace)
	if sec, err := secrets.Get(ctx, secret, metav1.GetOptions{}); err == nil && (hr != nil || sec.Labels[selfmanaged.SelfLabel] == "true") {
		if err := secrets.Delete(ctx, secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete values Secret %s/%s: %w", s.Namespace, secret, err)
		}
		removed = append(removed, "Secret "+s.Namespace+"/"+secret)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("values Secret %s/%s: %w", s.Namespace, secret, err)
	}
	// The resumer's ClusterRole and binding are objects of the CLI's revision; helm-controller's
	// first upgrade deletes them only if its identity may delete cluster-wide roles.
	// Tidying only: a user who may not delete cluster-wide roles loses nothing by skipping it.
	resumer := guard + ".resumer"
	if err := c.kube.RbacV1().ClusterRoleBindings().Delete(ctx, resumer, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return "", fmt.Errorf("delete ClusterRoleBinding %s (the resumer's): %w", resumer, err)
	}
	if err := c.kube.RbacV1().ClusterRoles().Delete(ctx, resumer, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return "", fmt.Errorf("delete ClusterRole %s (the resumer's): %w", resumer, err)
	}
	if guarded {
		removed = append(removed, "the CLI guard")
	}
	if len(removed) == 0 {
		return "", fmt.Errorf("no HelmRelease %s/%s, OCIRepository or CLI guard of release %s: the CLI owns the release already", s.Namespace, name, name)
	}
	return joinAnd(removed), nil
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
