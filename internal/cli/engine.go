package cli

import (
	"runtime/debug"

	action4 "helm.sh/helm/v4/pkg/action"
	release4 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/live"
)

// The engines diff upgrade renders with.
const (
	engineAuto  = "auto"
	engineHelm3 = "helm3"
	engineHelm4 = "helm4"
)

// engine is the Helm SDK chosen to render an upgrade, and why.
type engine struct {
	name, why string
}

// String reads "the Helm 4 SDK v4.3.1 (the release was written by Helm 4: apply method ssa)".
func (e engine) String() string {
	sdk := map[string]string{engineHelm3: "the Helm 3 SDK " + moduleVersion("helm.sh/helm/v3"), engineHelm4: "the Helm 4 SDK " + moduleVersion("helm.sh/helm/v4")}[e.name]
	return sdk + " (" + e.why + ")"
}

// chooseEngine picks the SDK of the Helm that wrote the release's latest revision: Helm 4
// records in the release how it applied it (apply_method), Helm 3 records nothing. --engine
// overrides the choice.
func (o *diffOptions) chooseEngine(cl *live.Client, name string) (engine, error) {
	switch o.engine {
	case engineHelm3, engineHelm4:
		return engine{o.engine, "--engine " + o.engine}, nil
	}
	cfg, err := o.cfg.Helm4(o.namespace)
	if err != nil {
		return engine{}, err
	}
	r, err := action4.NewGet(cfg).Run(name)
	if err != nil {
		return engine{}, action.ReleaseError(o.namespace, name, err)
	}
	rel, ok := r.(*release4.Release)
	if ok && rel.ApplyMethod != "" {
		return engine{engineHelm4, "the release was written by Helm 4: apply method " + rel.ApplyMethod}, nil
	}
	return engine{engineHelm3, "the release was written by Helm 3"}, nil
}

// moduleVersion is the version of a module this binary was built with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
