package kubeapis

import (
	"slices"

	chartutil3 "helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v4/pkg/chart/common"
)

// The Helm SDKs' renders with no cluster (helm template's) start from a default set of API
// versions, common.DefaultCapabilities (Helm 4) and chartutil.DefaultCapabilities (Helm 3),
// that no cluster serves, and take more through their APIVersions option only: the process
// leaves their default sets empty, so that each such render offers what Offered gives it,
// and nothing else. Every render of this program with no cluster passes Offered.
// xref: helm.sh/helm/v4 pkg/action/install.go RunWithContext ("Add mock objects in here so
// it doesn't use Kube API server": DefaultCapabilities.Copy() plus APIVersions);
// helm.sh/helm/v3 pkg/action/install.go alike.
func init() {
	c4 := *common.DefaultCapabilities
	c4.APIVersions = common.VersionSet{}
	common.DefaultCapabilities = &c4
	c3 := *chartutil3.DefaultCapabilities
	c3.APIVersions = chartutil3.VersionSet{}
	chartutil3.DefaultCapabilities = &c3
}

// Offered are the API versions a render with no cluster offers at Kubernetes release
// version ("v1.34.2"; "": the Helm 4 SDK's default, client-go's version, for either SDK: Helm 3
// would render for 1.20 unless built for another): those the release serves by default
// (Served), then given (a render's --api-versions, the CRDs a tree applies), clipped so that
// the SDK's append copies it.
func Offered(version string, given []string) ([]string, error) {
	if version == "" {
		version = DefaultVersion4()
	}
	v, err := ParseVersion(version)
	if err != nil {
		return nil, err
	}
	return slices.Clip(append(Served(v), given...)), nil
}

// DefaultVersion4 is the Kubernetes version the Helm 4 SDK renders for when no
// --kube-version is given (client-go's).
func DefaultVersion4() string { return common.DefaultCapabilities.KubeVersion.Version }
