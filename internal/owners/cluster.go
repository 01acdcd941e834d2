package owners

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Cluster is what the cluster check reads: kind scopes and live objects' metadata, one LIST
// per kind and namespace. *live.Client implements it.
type Cluster interface {
	Namespaced(group, version, kind string) (bool, error)
	List(ctx context.Context, group, version, kind, namespace string) ([]live.Meta, error)
}

// ClusterScopes lets a Checker ask the cluster the scope of kinds it does not know.
func ClusterScopes(c Cluster) manifest.ScopeResolver { return live.Scopes(c) }

// The labels and annotations by which Helm and Flux mark what they own.
const (
	labelManagedBy       = "app.kubernetes.io/managed-by"
	annotationRelease    = "meta.helm.sh/release-name"
	annotationReleaseNS  = "meta.helm.sh/release-namespace"
	annotationPolicy     = "helm.sh/resource-policy"
	labelHelmReleaseName = "helm.toolkit.fluxcd.io/name"
	labelHelmReleaseNS   = "helm.toolkit.fluxcd.io/namespace"
)

// Cluster compares the stream's objects with the live ones of the same identity and finds those
// that another owner holds: another Helm release (Helm would refuse to adopt them: "exists and
// cannot be imported into the current release"), no Helm release at all, a Flux HelmRelease,
// or an older release that keeps them (helm.sh/resource-policy: keep). It reads with one LIST
// per kind and namespace. A kind the cluster does not serve yet has no live objects. An error
// means the check could not look; it never reports clean then.
func (c *Checker) Cluster(ctx context.Context, objs []manifest.Object, cl Cluster) ([]Finding, error) {
	if c.opts.Release == "" {
		return nil, errors.New("the cluster check needs the release name (--release): it tells this release's objects from another's")
	}
	type listKey struct{ group, version, kind, namespace string }
	byList := map[listKey][]manifest.Object{}
	var order []listKey
	for _, o := range objs {
		if o.Hook || o.Name == "" {
			continue
		}
		id := c.Identity(o)
		_, version, _ := strings.Cut(o.APIVersion, "/")
		if !strings.Contains(o.APIVersion, "/") {
			version = o.APIVersion
		}
		k := listKey{id.Group, version, id.Kind, id.Namespace}
		if _, ok := byList[k]; !ok {
			order = append(order, k)
		}
		byList[k] = append(byList[k], o)
	}
	installed := c.installedReleases(ctx, cl)
	var findings []Finding
	for _, k := range order {
		items, err := cl.List(ctx, k.group, k.version, k.kind, k.namespace)
		if errors.Is(err, live.ErrNotServed) {
			continue // nothing of this kind exists yet, so nothing can clash
		}
		if err != nil {
			return nil, err
		}
		byName := make(map[string]int, len(items))
		for i, m := range items {
			byName[m.Name] = i
		}
		for _, o := range byList[k] {
			i, ok := byName[o.Name]
			if !ok {
				continue
			}
			if f, clash := c.liveFinding(o, items[i], installed); clash {
				findings = append(findings, f)
			}
		}
	}
	return findings, nil
}

// installedReleases returns whether Helm release ns/name is installed: its storage (Secrets
// labelled owner=helm, name=NAME, read once per namespace, metadata only) holds a revision that
// is not uninstalled or superseded. known is false when the storage could not be read.
func (c *Checker) installedReleases(ctx context.Context, cl Cluster) func(ns, name string) (installed, known bool) {
	type storage struct {
		live map[string]bool
		err  error
	}
	read := map[string]*storage{}
	return func(ns, name string) (bool, bool) {
		st := read[ns]
		if st == nil {
			st = &storage{live: map[string]bool{}}
			metas, err := cl.List(ctx, "", "v1", "Secret", ns)
			st.err = err
			for _, m := range metas {
				switch m.Labels["status"] {
				case "deployed", "failed", "pending-install", "pending-upgrade", "pending-rollback":
					if m.Labels["owner"] == "helm" {
						st.live[m.Labels["name"]] = true
					}
				}
			}
			read[ns] = st
		}
		return st.live[name], st.err == nil
	}
}

// liveFinding decides whether a live object of the same identity has another owner.
func (c *Checker) liveFinding(o manifest.Object, m live.Meta, installed func(ns, name string) (bool, bool)) (Finding, bool) {
	id := c.Identity(o)
	rel, relNS := m.Annotations[annotationRelease], m.Annotations[annotationReleaseNS]
	ours := rel == c.opts.Release && relNS == c.opts.Namespace && m.Labels[labelManagedBy] == "Helm"
	if ours {
		return Finding{}, false
	}
	this := fmt.Sprintf("release %s/%s (%s)", c.opts.Namespace, c.opts.Release, o.Where())
	f := Finding{Severity: c.opts.Severity, Object: id.String(), Owners: []Owner{{Kind: "release", Name: this}}}
	// Kept (helm.sh/resource-policy: keep) by a release that is no longer installed, or
	// owned by one that is: different situations, different advice.
	kept := rel != "" && m.Annotations[annotationPolicy] == "keep"
	alive, known := false, true
	if kept && m.Labels[labelHelmReleaseName] == "" {
		alive, known = installed(relNS, rel)
	}
	switch {
	case m.Labels[labelHelmReleaseName] != "":
		hr := m.Labels[labelHelmReleaseNS] + "/" + m.Labels[labelHelmReleaseName]
		f.ID = IDLiveHelmRelease
		f.Owners = append(f.Owners, Owner{Kind: "helmrelease", Name: "HelmRelease " + hr})
		f.Message = fmt.Sprintf("%s, rendered by %s, already exists in the cluster and belongs to Flux HelmRelease %s (release %s/%s): Helm would refuse to import it, and if it did, the two would overwrite each other. Remove it from one of the two charts.",
			id, this, hr, relNS, rel)
	case kept && !alive:
		f.ID = IDKept
		f.Owners = append(f.Owners, Owner{Kind: "release", Name: "release " + relNS + "/" + rel})
		unsure := ""
		if !known {
			unsure = " (whether it is still installed could not be read: no list on secrets in namespace " + relNS + ")"
		}
		f.Message = fmt.Sprintf("%s, rendered by %s, was kept in the cluster by release %s/%s%s (helm.sh/resource-policy: keep), which still names it as its own: Helm would refuse to import it. If %s/%s no longer needs it, move it over: kubectl annotate --overwrite %s %s=%s %s=%s.",
			id, this, relNS, rel, unsure, relNS, rel, kubectlRef(id), annotationRelease, c.opts.Release, annotationReleaseNS, c.opts.Namespace)
	case kept:
		f.ID = IDLiveOwner
		f.Owners = append(f.Owners, Owner{Kind: "release", Name: "release " + relNS + "/" + rel})
		f.Message = fmt.Sprintf("%s, rendered by %s, belongs to release %s/%s, which is installed and owns it (its helm.sh/resource-policy: keep only keeps it once that release is uninstalled): Helm would fail with \"exists and cannot be imported into the current release\". Do not move it while %s/%s is installed: that would break it; render it in one of the two charts only, or uninstall %s/%s first.",
			id, this, relNS, rel, relNS, rel, relNS, rel)
	case rel != "":
		f.ID = IDLiveOwner
		f.Owners = append(f.Owners, Owner{Kind: "release", Name: "release " + relNS + "/" + rel})
		f.Message = fmt.Sprintf("%s, rendered by %s, already belongs to release %s/%s: Helm would fail with \"exists and cannot be imported into the current release\", and if one release took it the other would delete it on its next upgrade. Render it in one of the two charts only.",
			id, this, relNS, rel)
	default:
		f.ID = IDLiveOwner
		owner := "no Helm release (no " + annotationRelease + " annotation)"
		if mb := m.Labels[labelManagedBy]; mb != "" && mb != "Helm" {
			owner = "another tool (" + labelManagedBy + ": " + mb + ")"
		}
		f.Owners = append(f.Owners, Owner{Kind: "cluster", Name: owner})
		f.Message = fmt.Sprintf("%s, rendered by %s, already exists in the cluster and belongs to %s: Helm would refuse to adopt it. Delete it first, or, if this release should own it, mark it: kubectl label --overwrite %s %s=Helm; kubectl annotate --overwrite %s %s=%s %s=%s.",
			id, this, owner, kubectlRef(id), labelManagedBy, kubectlRef(id), annotationRelease, c.opts.Release, annotationReleaseNS, c.opts.Namespace)
	}
	return f, true
}

// kubectlRef names an object for kubectl: "configmap.v1... -n ns name" style arguments.
func kubectlRef(id manifest.Identity) string {
	kind := strings.ToLower(id.Kind)
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return kind + " " + id.Name
	}
	return "-n " + id.Namespace + " " + kind + " " + id.Name
}
