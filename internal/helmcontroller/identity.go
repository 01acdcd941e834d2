package helmcontroller

import (
	"fmt"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/helm-drift/helm-drift/internal/flux"
	"k8s.io/apimachinery/pkg/runtime"
)

// Decode reads a HelmRelease (helm.toolkit.fluxcd.io/v2) from its unstructured content.
func Decode(obj map[string]any) (*v2.HelmRelease, error) {
	var hr v2.HelmRelease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &hr); err != nil {
		return nil, fmt.Errorf("not a helm.toolkit.fluxcd.io/v2 HelmRelease: %w", err)
	}
	if hr.Namespace == "" {
		hr.Namespace = "default"
	}
	return &hr, nil
}

// Identity is the Helm release a HelmRelease writes.
type Identity struct {
	// Name is the release name: spec.releaseName, else [targetNamespace-]name, shortened past
	// 53 characters.
	Name string
	// Namespace is the release namespace (spec.targetNamespace, else the HelmRelease's).
	Namespace string
	// Storage is the namespace of the release's storage Secrets (spec.storageNamespace, else
	// the HelmRelease's).
	Storage string
}

// IdentityOf returns the release a HelmRelease writes.
// xref: helm-controller api/v2 HelmRelease.GetReleaseNamespace, GetStorageNamespace.
func IdentityOf(hr *v2.HelmRelease) Identity {
	return Identity{Name: flux.ReleaseName(hr.Name, hr.Spec.ReleaseName, hr.Spec.TargetNamespace), Namespace: hr.GetReleaseNamespace(), Storage: hr.GetStorageNamespace()}
}

// RemoteCluster says where the cluster a HelmRelease is installed in is given when it is
// another than its own (spec.kubeConfig: helm-controller reads the release and applies its
// objects there), "" when it is its own.
func RemoteCluster(hr *v2.HelmRelease) string {
	kc := hr.Spec.KubeConfig
	switch {
	case kc == nil:
		return ""
	case kc.ConfigMapRef != nil:
		return "the cluster of ConfigMap " + hr.Namespace + "/" + kc.ConfigMapRef.Name
	case kc.SecretRef != nil:
		return "the kubeconfig of Secret " + hr.Namespace + "/" + kc.SecretRef.Name
	}
	return "a kubeconfig"
}
