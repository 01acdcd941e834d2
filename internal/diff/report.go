package diff

import (
	"strings"
	"time"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/history"
)

// Mode is how the chart's side is normalised: the API-server defaults told from drift.
type Mode string

// Normalisation modes.
const (
	// Server defaults the chart's side with a server-side dry-run of each object.
	Server Mode = "server"
	// Offline reproduces the API server's write in process (internal/normalize/defaulting): typed decode,
	// defaulting and conversion for built-in kinds, the structural schema for custom resources.
	Offline Mode = "offline"
	// Auto is Server where the dry-run is permitted, Offline per kind where it is forbidden.
	Auto Mode = "auto"
)

// Apply is how an upgrade writes the objects, for Input.Apply and Report.Apply.
type Apply string

// The apply methods.
const (
	ApplyServerSide Apply = "server-side"
	ApplyClientSide Apply = "client-side"
)

// Lookup is whom a HelmRelease's render answered the chart's lookup calls as.
type Lookup struct {
	// Account is the service account helm-controller renders as
	// ("system:serviceaccount:NAMESPACE:NAME": spec.serviceAccountName, else the
	// controller's --default-service-account).
	Account string `json:"account"`
	// Impersonated: the render acted as Account too; else as the user, Reason says why.
	Impersonated bool   `json:"impersonated"`
	Reason       string `json:"reason,omitempty"`
}

// Report is the measurement of one release; its JSON form is documented in the README.
type Report struct {
	// Stamp says when and against which cluster (kubeconfig context and API server) the
	// report was measured; the zero value (a report made in a test) prints no footer.
	Stamp
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Normalize is the mode asked for; objects say which one each got.
	Normalize Mode `json:"normalize"`
	// Engine says what rendered the desired manifest: for diff upgrade the Helm SDK and why,
	// for diff helmrelease helm-controller's render and the chart (absent for diff release).
	Engine string `json:"engine,omitempty"`
	// Defaulting says whose defaulting code the offline normalisation ran when it is not that
	// of the cluster's own Kubernetes minor version (absent when it is).
	Defaulting string `json:"defaulting,omitempty"`
	// Apply says how Helm writes this release: "client-side" (Helm 3's three-way merge) or
	// "server-side" (Helm 4), read from the live objects' managedFields.
	Apply Apply `json:"apply"`
	// HelmRelease ("namespace/name") is the Flux HelmRelease that manages the release, whose
	// ignore rules apply: for diff helmrelease the one measured, for diff release and diff
	// upgrade the one the live objects name (see Identity).
	HelmRelease string `json:"helmRelease,omitempty"`
	// Source says where a HelmRelease's chart came from (diff helmrelease and diff tree).
	Source string `json:"source,omitempty"`
	// Sides name the two sides compared, the other and the chart's, where they are not the
	// live cluster and the chart: "base" and "head" for diff tree.
	Sides [2]string `json:"-"`
	// Causes say what in the change between two revisions made the rows (diff tree only):
	// the chart's version, a values key and its source, a substitution variable.
	Causes []string `json:"causes,omitempty"`
	// Lookup says whom the chart's lookup calls were answered as (diff helmrelease only).
	Lookup *Lookup `json:"lookup,omitempty"`
	// Next is what helm-controller's next reconcile will do (diff helmrelease only); each
	// row's resolvedByUpgrade then says whether that reconcile resolves it.
	Next *flux.Next `json:"nextReconcile,omitempty"`
	// Divergences counts the rows that are drift (SHADOWS whose values agree are not).
	Divergences int `json:"divergences"`
	// Compared counts the fields compared.
	Compared int `json:"compared"`
	// Counts counts rows by class.
	Counts map[compare.Class]int `json:"counts"`
	// PendingDeletions counts fields an upgrade would remove.
	PendingDeletions int `json:"pendingDeletions"`
	// Unstable counts the rows whose chart value differs between two renders of the same
	// inputs; they are drift only with Input.CountUnstable.
	Unstable int `json:"unstable"`
	// CountedUnstable: the unstable rows are counted in Divergences.
	CountedUnstable bool `json:"countedUnstable,omitempty"`
	// Refused counts the objects Helm would refuse to adopt (the upgrade fails on them).
	Refused int `json:"refused"`
	// WillFail counts the objects the API server refuses (WILL-FAIL): the upgrade fails.
	WillFail int `json:"willFail"`
	// DriftRows counts the counted rows the cluster moved (alone or with the chart): the live
	// object left what was applied. Changes counts those only the chart moved: the upgrade
	// brings them, nobody drifted.
	DriftRows int `json:"drift"`
	Changes   int `json:"changes"`
	// Rendered: the desired manifest is a new render, so rows say who moved (see Input).
	Rendered bool `json:"-"`
	// Unmeasured counts the objects that could not be measured (each says why in its error).
	Unmeasured int      `json:"unmeasured"`
	Objects    []Object `json:"objects"`
	// Prune lists the objects of the release the desired manifest drops.
	Prune []Prune `json:"prune"`
	// Suggested are the ignore rules --suggest-ignore asked for (Input.Suggest).
	Suggested *advise.Advice `json:"suggestedIgnore,omitempty"`
}

// Object is the measurement of one object.
type Object struct {
	// Object names it: "Deployment.apps web -n apps".
	Object string `json:"object"`
	// Missing: the chart renders it, the cluster lacks it.
	Missing bool `json:"missing,omitempty"`
	// Error says why the object could not be measured (it then has no rows).
	Error string `json:"error,omitempty"`
	// Normalize is the mode this object got, with the reason when it is not the one asked for.
	Normalize string `json:"normalize"`
	// Compared counts the fields compared; Ignored those divergences ignore rules dropped.
	Compared int   `json:"compared"`
	Ignored  int   `json:"ignored,omitempty"`
	Rows     []Row `json:"divergences"`
	// Refused says why Helm would refuse this object: new to the release, it exists in the
	// cluster without the release's ownership metadata (the upgrade then fails on it).
	// Adopted: the same, taken over with --take-ownership.
	Refused string `json:"refused,omitempty"`
	Adopted bool   `json:"adopted,omitempty"`
	// Refusal: the API server refuses the write the upgrade would make (a dry run said so):
	// the upgrade fails on this object (WILL-FAIL).
	Refusal *Refusal `json:"refusal,omitempty"`
	// View is the object's two sides for the line views, when Input.Views asked for it
	// (a Secret's values redacted).
	View *compare.View `json:"-"`
}

// Row is one divergence.
type Row struct {
	Class   compare.Class `json:"class"`
	Path    string        `json:"path"`
	Pointer string        `json:"pointer"`
	Chart   any           `json:"chart,omitempty"`
	Cluster any           `json:"cluster,omitempty"`
	// Redacted: a Secret's data, whose values are never printed.
	Redacted bool `json:"redacted,omitempty"`
	// ChartBytes and ClusterBytes are a redacted value's sizes, so a changed key shows as
	// changed (a data value's decoded size).
	ChartBytes   *int `json:"chartBytes,omitempty"`
	ClusterBytes *int `json:"clusterBytes,omitempty"`
	// Inert: changes nothing in the running pod.
	Inert bool `json:"inert,omitempty"`
	// PendingDeletion: in the release's last manifest, not in the desired one: an upgrade
	// removes it.
	PendingDeletion bool `json:"pendingDeletion,omitempty"`
	// Resolved says whether the upgrade would make the cluster match the chart here; Why says
	// what it would do.
	Resolved bool   `json:"resolvedByUpgrade"`
	Why      string `json:"upgrade"`
	// Unstable: two renders of the same inputs disagree on this field (random values,
	// timestamps): every upgrade changes it, so it is not counted as drift by default.
	Unstable bool `json:"unstable,omitempty"`
	// Moved says who moved the field away from what the stored release applied: MovedCluster
	// (drift), MovedChart (the new render differs from what was applied; the live object
	// still equals it) or MovedBoth.
	Moved Moved `json:"moved,omitempty"`
	// RenderDependent: the chart moved it although the render's chart and values equal the
	// stored release's: the chart renders it differently each time, or once its objects exist
	// (lookup).
	RenderDependent bool `json:"renderDependent,omitempty"`
	// Managers are the field managers other than Helm's that own the cluster's value.
	Managers []string `json:"managers,omitempty"`
	// MovedAt is when the latest of Managers last wrote the object (its managedFields entry's
	// time: the field's, or a later write of the same manager).
	MovedAt *time.Time `json:"movedAt,omitempty"`
	// Live, for diff tree --live, is what the cluster holds at this field: LiveHead (the head's
	// value already), LiveBase (the base's: the merge changes it), LiveOther (another value:
	// drift the merge overwrites), LiveAbsent (the object is not in the cluster).
	Live string `json:"live,omitempty"`
	// From and Agree, for SHADOWS: the envFrom source the inline entry hides, and whether
	// the two values agree (absent when they cannot be compared).
	From  string `json:"from,omitempty"`
	Agree *bool  `json:"agree,omitempty"`
}

// What the cluster holds at a row's field (Row.Live).
const (
	LiveHead   = "head"
	LiveBase   = "base"
	LiveOther  = "other"
	LiveAbsent = "absent"
)

// Moved is who moved a field away from what the stored release applied (Row.Moved).
type Moved string

// Who moved a field.
const (
	MovedCluster Moved = "cluster"
	MovedChart   Moved = "chart"
	MovedBoth    Moved = "both"
)

// Prune is an object of the release that the desired manifest no longer renders.
type Prune struct {
	Object string `json:"object"`
	// Keep: helm.sh/resource-policy: keep, so Helm leaves it in the cluster.
	Keep bool `json:"keep,omitempty"`
	// Live: the object exists in the cluster.
	Live bool `json:"live"`
	// View is the live object, for the line views (Input.Views; nil when not live).
	View *compare.View `json:"-"`
}

// SummaryRow is one release of "diff release --all".
type SummaryRow struct {
	// Report is the release's whole report, kept for the line views (Input.Views).
	Report *Report `json:"-"`
	// Suggested are the release's suggested ignore rules (Input.Suggest).
	Suggested *advise.Advice `json:"suggestedIgnore,omitempty"`
	// HelmRelease and Next: the Flux HelmRelease and its next reconcile's action (diff
	// helmrelease --all only).
	HelmRelease string `json:"helmRelease,omitempty"`
	Next        string `json:"nextReconcile,omitempty"`
	// Context is the kubeconfig context of the release's cluster.
	Context          string                `json:"context,omitempty"`
	Release          string                `json:"release"`
	Namespace        string                `json:"namespace"`
	Revision         int                   `json:"revision"`
	Divergences      int                   `json:"divergences"`
	Compared         int                   `json:"compared"`
	Counts           map[compare.Class]int `json:"counts"`
	PendingDeletions int                   `json:"pendingDeletions"`
	// Drift and Changes split the divergences: the cluster moved, or only the chart did.
	Drift   int `json:"drift"`
	Changes int `json:"changes"`
	// Refused and WillFail count the objects Helm, or the API server, would refuse: the
	// upgrade fails. Prunes counts the objects the upgrade would delete (live, not kept).
	Refused  int `json:"refused,omitempty"`
	WillFail int `json:"willFail,omitempty"`
	Prunes   int `json:"prunes,omitempty"`
	// Unmeasured counts the objects that could not be measured.
	Unmeasured int `json:"unmeasured"`
	// Error says why the release could not be measured.
	Error string `json:"error,omitempty"`
	// Since and Timeline are serve's memory of the release's divergences: when its oldest
	// open one was first seen (absent: none open), and each one's history, open ones first.
	Since    *time.Time      `json:"since,omitempty"`
	Timeline []history.Entry `json:"timeline,omitempty"`
}

// The kinds of what a report or a summary row measured: a Helm release (diff release, diff
// upgrade) or a Flux HelmRelease (diff helmrelease).
const (
	KindRelease     = "release"
	KindHelmRelease = "helmrelease"
)

// identity is the kind, namespace and name of a measurement of release namespace/name, or of
// helmRelease ("namespace/name") when that is what was measured (set).
func identity(helmRelease, namespace, release string) (kind, ns, name string) {
	if helmRelease == "" {
		return KindRelease, namespace, release
	}
	ns, name, _ = strings.Cut(helmRelease, "/")
	return KindHelmRelease, ns, name
}

// Identity says what the row measured: its kind (KindRelease or KindHelmRelease), namespace
// and name.
func (r SummaryRow) Identity() (kind, namespace, name string) {
	return identity(r.HelmRelease, r.Namespace, r.Release)
}

// Identity says what the report measured: its kind (KindRelease or KindHelmRelease),
// namespace and name. A release that a HelmRelease manages, measured by diff release or diff
// upgrade, is a release (its report's HelmRelease names the manager); only diff helmrelease,
// which predicts the next reconcile (Next), measures a HelmRelease. Its summary row says the
// same (Summarise).
func (r *Report) Identity() (kind, namespace, name string) {
	if r.Next == nil {
		return KindRelease, r.Namespace, r.Release
	}
	return identity(r.HelmRelease, r.Namespace, r.Release)
}

// Summarise turns a report into its summary row.
func Summarise(r *Report) SummaryRow {
	t := r.Tally()
	row := SummaryRow{Refused: t.Refused, WillFail: t.WillFail, Prunes: t.Prunes, Release: r.Release, Namespace: r.Namespace, Revision: r.Revision, Divergences: r.Divergences,
		Compared: r.Compared, Counts: r.Counts, PendingDeletions: r.PendingDeletions, Drift: r.DriftRows, Changes: r.Changes, Unmeasured: r.Unmeasured,
		Suggested: r.Suggested}
	if r.Next != nil {
		row.HelmRelease, row.Next = r.HelmRelease, r.Next.Action
	}
	return row
}
