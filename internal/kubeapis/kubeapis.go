// Package kubeapis says which API versions Kubernetes serves by default at a given version,
// as its discovery lists them ("group/version" and "group/version/Kind"), and makes the Helm
// SDKs' renders with no cluster offer exactly those.
//
// helm template offers a fixed set (the Helm SDK's DefaultVersionSet: every group version
// client-go's scheme knows, policy/v1beta1 and batch/v1beta1 among them, whatever
// --kube-version says), so a chart that asks .Capabilities.APIVersions.Has "policy/v1beta1"
// renders a PodSecurityPolicy offline that helm-controller, on any cluster since Kubernetes
// 1.25, does not render. Here the answer comes from Kubernetes' own API lifecycle: each
// built-in type says in which release it was introduced and, for a pre-release version, in
// which it was removed (k8s.io/api's zz_generated.prerelease-lifecycle.go).
package kubeapis

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Version is a Kubernetes minor release.
type Version struct{ Major, Minor int }

// Less says whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

// String is "1.34".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// ParseVersion reads the major and minor release of a version as Helm's capabilities hold
// it: "v1.34.2", "1.34", or a provider's "v1.33.4-gke.1245000".
func ParseVersion(v string) (Version, error) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return Version{}, fmt.Errorf("kubernetes version %q: want e.g. v1.34.2", v)
	}
	var out Version
	fmt.Sscan(m[1], &out.Major)
	fmt.Sscan(m[2], &out.Minor)
	return out, nil
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// betaDefaultOff is the first release whose new beta APIs the API server serves only when
// enabled (KEP-3136): a beta version introduced since is not served by default.
var betaDefaultOff = Version{1, 24}

// lifecycle is one built-in kind's: introduced in a release, removed in another (zero: not
// removed).
type lifecycle struct {
	gvk                 schema.GroupVersionKind
	introduced, removed Version
}

// kinds are the built-in kinds that carry Kubernetes' API lifecycle: client-go's scheme and
// the API extensions group, as the Helm SDK registers them for its default set, and the
// aggregator's API services, which every API server serves too. Lists are left out, as
// discovery lists none; so are the kinds every group version registers (metav1's request
// options and events), which carry no lifecycle.
var kinds = sync.OnceValue(func() []lifecycle {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextv1.AddToScheme, apiextv1beta1.AddToScheme,
		apiregv1.AddToScheme, apiregv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("kubeapis: register the built-in kinds: %v", err))
		}
	}
	var out []lifecycle
	for gvk, t := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		obj := reflect.New(t).Interface()
		in, ok := obj.(interface{ APILifecycleIntroduced() (int, int) })
		if !ok {
			continue
		}
		l := lifecycle{gvk: gvk}
		l.introduced.Major, l.introduced.Minor = in.APILifecycleIntroduced()
		if r, ok := obj.(interface{ APILifecycleRemoved() (int, int) }); ok {
			l.removed.Major, l.removed.Minor = r.APILifecycleRemoved()
		}
		out = append(out, l)
	}
	return out
})

// stage is "alpha", "beta" or "" (generally available) for a version such as "v1beta2".
func stage(version string) string {
	switch {
	case strings.Contains(version, "alpha"):
		return "alpha"
	case strings.Contains(version, "beta"):
		return "beta"
	}
	return ""
}

// servedAt says whether the API server of release v serves the kind by default: introduced
// by then and not yet removed; an alpha version never (it must be enabled), a beta one only
// when it was introduced before betaDefaultOff.
func (l lifecycle) servedAt(v Version) bool {
	if v.Less(l.introduced) || l.removed != (Version{}) && !v.Less(l.removed) {
		return false
	}
	switch stage(l.gvk.Version) {
	case "alpha":
		return false
	case "beta":
		return l.introduced.Less(betaDefaultOff)
	}
	return true
}

// Served are the built-in API versions the API server of release v serves by default, in
// both forms discovery gives Helm's capabilities ("group/version" and
// "group/version/Kind"), sorted. What it cannot say: a version an administrator enabled or
// disabled (pass it to a render's --api-versions), and the beta versions Kubernetes kept on by
// default although introduced since 1.24 (flowcontrol.apiserver.k8s.io/v1beta3 from 1.26 to
// 1.31), which are not offered.
func Served(v Version) []string {
	set := map[string]bool{}
	for _, l := range kinds() {
		if l.servedAt(v) {
			gv := l.gvk.GroupVersion().String()
			set[gv] = true
			set[gv+"/"+l.gvk.Kind] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Builtin says whether a "group/version" or "group/version/Kind" is of a group Kubernetes
// itself serves (whether or not at a given release): a render's answer for it is the API
// server's, not a question of what else the cluster runs.
func Builtin(apiVersion string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	if group == "" {
		return false
	}
	if isVersion(group) {
		group = "" // "v1", "v1/Pod": the core group
	}
	return builtinGroups()[group]
}

// isVersion: "v1", "v1beta2".
func isVersion(s string) bool { return versionName.MatchString(s) }

var versionName = regexp.MustCompile(`^v\d+((alpha|beta)\d+)?$`)

// builtinGroups are the groups of the built-in kinds ("" the core group).
var builtinGroups = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, l := range kinds() {
		out[l.gvk.Group] = true
	}
	return out
})

// CRDServes are the API versions a CustomResourceDefinition (an object's fields, as decoded
// from YAML or JSON) makes the API server serve once created, as discovery lists them:
// "group/version" and "group/version/Kind" for each version it serves. None for another
// object.
func CRDServes(crd map[string]any) []string {
	if crd["kind"] != "CustomResourceDefinition" || !strings.HasPrefix(fmt.Sprint(crd["apiVersion"]), "apiextensions.k8s.io/") {
		return nil
	}
	spec, _ := crd["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	group, _ := spec["group"].(string)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	if v, ok := spec["version"].(string); ok && len(versions) == 0 {
		versions = []any{map[string]any{"name": v}} // apiextensions.k8s.io/v1beta1's one version
	}
	var out []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" || group == "" || m["served"] == false {
			continue
		}
		out = append(out, group+"/"+name)
		if kind != "" {
			out = append(out, group+"/"+name+"/"+kind)
		}
	}
	return out
}

// CRDServesIn are the API versions the CustomResourceDefinitions among the YAML documents of
// data serve (CRDServes), read by the one parser (internal/manifest); none when data does not
// read, which whatever applies it names.
func CRDServesIn(data []byte) []string {
	var out []string
	for _, crd := range CRDsIn(data) {
		out = append(out, CRDServes(crd)...)
	}
	return out
}

// CRDsIn are the CustomResourceDefinitions among the YAML documents of data, decoded (none
// when data does not read).
func CRDsIn(data []byte) []map[string]any {
	st, err := manifest.Split(data)
	if err != nil {
		return nil
	}
	objs, err := manifest.Objects(st)
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, o := range objs {
		if o.Kind != "CustomResourceDefinition" {
			continue
		}
		if m, err := o.Decode(); err == nil {
			out = append(out, m)
		}
	}
	return out
}
