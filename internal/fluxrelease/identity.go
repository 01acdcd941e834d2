package fluxrelease

import (
	"crypto/sha256"
	"fmt"

	v2 "github.com/fluxcd/helm-controller/api/v2"
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
// xref: helm-controller api/v2 HelmRelease.GetReleaseName, GetReleaseNamespace,
// GetStorageNamespace; internal/release/name.go ShortenName.
func IdentityOf(hr *v2.HelmRelease) Identity {
	return Identity{Name: ShortenName(hr.GetReleaseName()), Namespace: hr.GetReleaseNamespace(), Storage: hr.GetStorageNamespace()}
}

// ShortenName shortens a release name longer than 53 characters to its first 40 characters,
// a hyphen and the first 12 hex digits of its SHA-256, as helm-controller does.
// xref: helm-controller internal/release/name.go ShortenName.
func ShortenName(name string) string {
	const maxLength, hashLength = 53, 12
	if len(name) <= maxLength {
		return name
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return name[:maxLength-(hashLength+1)] + "-" + sum[:hashLength]
}
