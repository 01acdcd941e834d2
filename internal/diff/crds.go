package diff

import "github.com/helm-drift/helm-drift/internal/compare"

// CRDPolicy is how the upgrade treats the CRDs of the chart's crds/ directory
// (Input.CRDPolicy): as Helm does (helm install creates the missing ones and leaves the others;
// helm upgrade never touches them), or by helm-controller's crds policy.
type CRDPolicy string

// The CRD policies.
const (
	CRDsHelmInstall   CRDPolicy = "helm install"
	CRDsHelmUpgrade   CRDPolicy = "helm upgrade"
	CRDsCreate        CRDPolicy = "Create"
	CRDsCreateReplace CRDPolicy = "CreateReplace"
	CRDsSkip          CRDPolicy = "Skip"
	// CRDsUntouched: a HelmRelease whose next reconcile neither installs nor upgrades.
	CRDsUntouched CRDPolicy = "untouched"
)

// crdRows rewrites a crds/ CRD's predictions for policy: whether the upgrade creates it
// (missing), and whether it replaces it (present).
// xref: Helm v3 pkg/action/install.go installCRDs (an existing CRD is left); pkg/action/
// upgrade.go (crds/ not read); helm-controller internal/action/crds.go applyCRDs.
func crdRows(o *Object, policy CRDPolicy) {
	for i := range o.Rows {
		r := &o.Rows[i]
		r.PendingDeletion = false
		switch {
		case o.Missing && (policy == CRDsHelmInstall || policy == CRDsCreate || policy == CRDsCreateReplace):
			r.Resolved, r.Why = true, "created ("+crdsBy(policy)+")"
		case policy == CRDsUntouched:
			r.Resolved, r.Why = false, "left as it is: the next reconcile neither installs nor upgrades (crds/ are applied only then)"
		case o.Missing && policy == CRDsHelmUpgrade:
			r.Resolved, r.Why = false, "helm upgrade does not create it: crds/ are installed by helm install only"
		case o.Missing:
			r.Resolved, r.Why = false, "not created (crds policy Skip)"
		case policy == CRDsCreateReplace && r.Class != compare.ClusterOnly:
			r.Resolved, r.Why = true, "replaced with the chart's (crds policy CreateReplace)"
		case policy == CRDsCreateReplace:
			r.Resolved, r.Why = true, "removed: the CRD is replaced with the chart's (crds policy CreateReplace)"
		case policy == CRDsHelmUpgrade:
			r.Resolved, r.Why = false, "helm upgrade leaves this CRD as it is (Helm never upgrades crds/)"
		case policy == CRDsHelmInstall:
			r.Resolved, r.Why = false, "helm install leaves an existing CRD as it is"
		default:
			r.Resolved, r.Why = false, "left as it is (crds policy "+string(policy)+")"
		}
	}
}

func crdsBy(policy CRDPolicy) string {
	if policy == CRDsHelmInstall {
		return "helm install, from crds/, before the templates"
	}
	return "crds policy " + string(policy)
}
