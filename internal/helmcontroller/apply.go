package helmcontroller

import (
	v2 "github.com/fluxcd/helm-controller/api/v2"
	release4 "helm.sh/helm/v4/pkg/release/v1"
)

// Apply is how helm-controller writes a release's objects in its next install or upgrade.
type Apply struct {
	// ServerSide: server-side apply (else Helm's client-side three-way merge).
	ServerSide bool
	// ForceConflicts: a server-side apply takes the fields other managers own.
	ForceConflicts bool
	// ForceReplace: objects are replaced (spec.upgrade.force on a client-side upgrade).
	ForceReplace bool
	// TakeOwnership: objects that another release or nobody owns are adopted, not refused.
	TakeOwnership bool
}

// ApplyPolicy is how helm-controller v1.6 writes hr's next release. An install (last nil)
// applies server-side unless spec.install.serverSideApply is false. An upgrade applies
// server-side when spec.upgrade.serverSideApply is enabled, client-side when disabled, and on
// auto (the default) as the last release was written (Helm 4 keeps a release's apply method;
// a Helm 3 release has none: client-side). A server-side apply always forces conflicts;
// spec.upgrade.force replaces objects only on a client-side upgrade. Ownership is taken unless
// the install's or the upgrade's disableTakeOwnership says not to.
//
// xref: helm-controller internal/action/install.go newInstall, upgrade.go Upgrade and
// newUpgrade (UseHelm3Defaults, a controller flag, is taken as unset).
func ApplyPolicy(hr *v2.HelmRelease, last *release4.Release) Apply {
	if last == nil {
		ssa := true
		if s := hr.GetInstall().ServerSideApply; s != nil {
			ssa = *s
		}
		return Apply{ServerSide: ssa, ForceConflicts: ssa, TakeOwnership: !hr.GetInstall().DisableTakeOwnership}
	}
	var ssa bool
	switch hr.GetUpgrade().ServerSideApply {
	case v2.ServerSideApplyEnabled:
		ssa = true
	case v2.ServerSideApplyDisabled:
		ssa = false
	default:
		ssa = last.ApplyMethod == "ssa"
	}
	return Apply{ServerSide: ssa, ForceConflicts: ssa, ForceReplace: hr.GetUpgrade().Force && !ssa,
		TakeOwnership: !hr.GetUpgrade().DisableTakeOwnership}
}

// CRDPolicy is helm-controller v1.6's crds policy for hr's next release: spec.install.crds for
// an install (last nil), spec.upgrade.crds for an upgrade, Create when unset (for both: the
// code's default, though the API's documentation says Skip for upgrades).
// xref: helm-controller internal/action/crds.go crdPolicyOrDefault; install.go, upgrade.go.
func CRDPolicy(hr *v2.HelmRelease, last *release4.Release) string {
	return crdPolicy(hr, last != nil)
}

// crdPolicy is CRDPolicy for an upgrade or an install.
func crdPolicy(hr *v2.HelmRelease, upgrade bool) string {
	p := hr.GetInstall().CRDs
	if upgrade {
		p = hr.GetUpgrade().CRDs
	}
	if p == "" {
		return string(v2.Create)
	}
	return string(p)
}
