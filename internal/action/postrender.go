package action

import (
	"fmt"
	"io"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
	"github.com/helm-drift/helm-drift/internal/pipeline"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// PostRender is the post-renderer's work on one stream: Flux drift detection set on the chosen
// HelmReleases, the self pair appended behind its suspend bracket, and the second-owner check.
// The command line validates the flags and fills it; Run returns the stream to write, or an
// error and nothing (Helm must not apply half a stream).
type PostRender struct {
	// Drift sets spec.driftDetection; with IgnoreFromCluster its ignore rules are completed
	// from the cluster's HelmReleases.
	Drift             *transform.DriftDetection
	IgnoreFromCluster bool
	// Release and Namespace are the release's; Install says the CLI installs it (the
	// bracket's lookup).
	Release, Namespace string
	Install            bool
	// Self, when set, is the self pair to append (Release, Namespace and Drift set).
	Self *transform.Self
	// Owners, when set, is the second-owner check: findings of severity error fail the
	// render (OwnersError), the others are warnings.
	Owners *Owners
	// Verbose also prints the check's notes.
	Verbose bool
	// Kube is the run's cluster, asked at most once however many steps need it.
	Kube *Connection
	// Warn receives the warnings and notes (stderr).
	Warn io.Writer
}

// Run post-renders input.
func (r *PostRender) Run(input []byte) ([]byte, error) {
	if r.IgnoreFromCluster {
		r.Drift.IgnoreFrom = func(hr transform.HelmReleaseRef) ([]flux.IgnoreRule, []string, error) {
			return IgnoreFromCluster(r.Kube, hr)
		}
	}
	p := &pipeline.Renderer{Transforms: []transform.Transform{r.Drift}}
	if r.Self != nil {
		p.Transforms = append(p.Transforms, selfNamespaceCheck{namespace: r.Namespace, release: r.Release})
		state, err := Bracket(r.Kube, r.Namespace, r.Release, r.Install, r.Self.Guard)
		if err != nil {
			return nil, err
		}
		if state.Warning != "" {
			fmt.Fprintf(r.Warn, "helm-drift: warning: %s\n", state.Warning)
		}
		r.Self.Suspend, r.Self.Adopted = state.Suspend, state.Adopted
		p.Transforms = append(p.Transforms, r.Self)
	}
	if r.Owners != nil {
		p.Checks = append(p.Checks, r.checkOwners)
	}
	return p.Render(input)
}

// checkOwners runs the second-owner check on the stream: findings of severity error fail the
// render, the others are reported as warnings.
func (r *PostRender) checkOwners(s *manifest.Stream) error {
	objs, err := manifest.Objects(s)
	if err != nil {
		return err
	}
	c, findings, err := r.Owners.Run(objs)
	if err != nil {
		return fmt.Errorf("second owners: %w", err)
	}
	if owners.HasErrors(findings) {
		return OwnersError{findings}
	}
	for _, f := range findings {
		fmt.Fprintf(r.Warn, "helm-drift: warning: %s: %s\n", f.ID, f.Message)
	}
	if r.Verbose {
		for _, n := range c.Notes {
			fmt.Fprintf(r.Warn, "helm-drift: note: %s\n", n)
		}
	}
	return nil
}

// OwnersError is the render failure for findings of severity error.
type OwnersError struct{ Findings []owners.Finding }

// Error lists the findings.
func (e OwnersError) Error() string {
	msg := fmt.Sprintf("second owners: %d finding(s); nothing was rendered (--owners warn reports them without failing):", len(e.Findings))
	for _, f := range e.Findings {
		msg += fmt.Sprintf("\n  %s: %s", f.ID, f.Message)
	}
	return msg
}

// selfNamespaceCheck refuses a stream whose own objects say the release is in another
// namespace than --namespace: every object that names a namespace names one and the same other
// one, and no object of a namespaced kind is left to default into the release namespace. A
// chart that puts some objects elsewhere (a platform chart's HelmReleases in their teams'
// namespaces) beside objects of its own namespace contradicts nothing.
type selfNamespaceCheck struct{ namespace, release string }

// Transform reads the stream; it changes nothing.
func (c selfNamespaceCheck) Transform(s *manifest.Stream) error {
	objs, err := manifest.Objects(s)
	if err != nil {
		return err
	}
	named := map[string]int{}
	var first manifest.Object
	for _, ob := range objs {
		if ob.Hook {
			continue
		}
		if ob.Namespace == "" {
			if manifest.BuiltinScope(ob.APIVersion, ob.Kind) == manifest.Namespaced {
				return nil // it goes into the release namespace, whatever that is
			}
			continue
		}
		if len(named) == 0 {
			first = ob
		}
		named[ob.Namespace]++
	}
	if len(named) != 1 || named[c.namespace] > 0 {
		return nil // none named, several, or this one: nothing contradicts --namespace
	}
	for ns, n := range named {
		return fmt.Errorf("--self: --namespace is %q, but every object of the stream that names a namespace names %q (%d; the first: %s %s/%s in %s): the self HelmRelease would write release %s into %q; pass the -n of helm install as --namespace=%s",
			c.namespace, ns, n, first.Kind, ns, first.Name, first.Where(), c.release, c.namespace, ns)
	}
	return nil
}
