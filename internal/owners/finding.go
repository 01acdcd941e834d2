package owners

// Severity is how much a finding matters: an error stops a render (with --owners error).
type Severity string

// Severities.
const (
	SeverityError Severity = "error"
	SeverityWarn  Severity = "warn"
)

// Finding IDs.
const (
	// IDDuplicate: two documents of one stream are one object.
	IDDuplicate = "duplicate-identity"
	// IDTwoWriters: two HelmReleases write one Helm release.
	IDTwoWriters = "two-writers-of-release"
	// IDLiveOwner: a live object belongs to another Helm release or is not Helm's at all.
	IDLiveOwner = "owned-by-another-release"
	// IDLiveHelmRelease: a live object belongs to another Flux HelmRelease.
	IDLiveHelmRelease = "owned-by-helmrelease"
	// IDKept: a live object kept (helm.sh/resource-policy: keep) by an older release.
	IDKept = "kept-by-older-release"
	// IDDeep: the charts of two HelmReleases (or a chart and this stream) render one object.
	IDDeep = "rendered-by-two-releases"
)

// Finding is one object with two owners.
type Finding struct {
	// ID says what kind of finding it is (the ID constants).
	ID string `json:"id"`
	// Severity is error or warn.
	Severity Severity `json:"severity"`
	// Object is the object (or, for two writers, the Helm release) both owners claim.
	Object string `json:"object"`
	// Owners are the two (or more) owners.
	Owners []Owner `json:"owners"`
	// Message says what is wrong and what to do, in one paragraph.
	Message string `json:"message"`
}

// Owner is one claimant of an object.
type Owner struct {
	// Kind: document (of this stream), release (a Helm release), helmrelease (a Flux
	// HelmRelease), or cluster (a live object with no Helm owner).
	Kind string `json:"kind"`
	// Name names it: "document 3 (source: c/templates/a.yaml)", "release apps/web".
	Name string `json:"name"`
}

// HasErrors reports whether any finding has severity error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}
