package cli

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"helm.sh/helm/v3/pkg/postrender"
	action4 "helm.sh/helm/v4/pkg/action"
	chart4 "helm.sh/helm/v4/pkg/chart"
	loader4 "helm.sh/helm/v4/pkg/chart/loader"
	helmcli4 "helm.sh/helm/v4/pkg/cli"
	values4 "helm.sh/helm/v4/pkg/cli/values"
	downloader4 "helm.sh/helm/v4/pkg/downloader"
	getter4 "helm.sh/helm/v4/pkg/getter"
	postrenderer4 "helm.sh/helm/v4/pkg/postrenderer"
	registry4 "helm.sh/helm/v4/pkg/registry"
	release4 "helm.sh/helm/v4/pkg/release/v1"

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
		return engine{}, releaseError(o.namespace, name, err)
	}
	rel, ok := r.(*release4.Release)
	if ok && rel.ApplyMethod != "" {
		return engine{engineHelm4, "the release was written by Helm 4: apply method " + rel.ApplyMethod}, nil
	}
	return engine{engineHelm3, "the release was written by Helm 3"}, nil
}

// renderUpgrade4 renders the upgrade twice with the Helm 4 SDK, as "helm upgrade" of the Helm 4
// CLI would (a dry run that answers lookup from the cluster unless --lookup=false).
func (o *diffOptions) renderUpgrade4(ctx context.Context, cl *live.Client, name, chartRef string, install bool, errOut io.Writer) (string, string, error) {
	cfg, err := o.cfg.Helm4(o.namespace)
	if err != nil {
		return "", "", err
	}
	settings := helmcli4.New()
	settings.KubeConfig, settings.KubeContext = o.kube.kubeconfig, o.kube.kubeContext
	settings.SetNamespace(o.namespace)
	r := o.registry
	opts := []registry4.ClientOption{registry4.ClientOptEnableCache(true), registry4.ClientOptWriter(errOut),
		registry4.ClientOptCredentialsFile(settings.RegistryConfig), registry4.ClientOptBasicAuth(r.username, r.password)}
	if r.plainHTTP {
		opts = append(opts, registry4.ClientOptPlainHTTP())
	}
	hc, err := r.httpClient()
	if err != nil {
		return "", "", inputError{err}
	}
	if hc != nil {
		opts = append(opts, registry4.ClientOptHTTPClient(hc))
	}
	rc, err := registry4.NewClient(opts...)
	if err != nil {
		return "", "", inputError{err}
	}
	cfg.RegistryClient = rc
	up := action4.NewUpgrade(cfg)
	up.SetRegistryClient(rc)
	up.Namespace = o.namespace
	up.DryRunStrategy = action4.DryRunClient
	if o.lookup {
		up.DryRunStrategy = action4.DryRunServer
	}
	up.EnableDNS = o.enableDNS
	up.DisableOpenAPIValidation = true
	up.SkipSchemaValidation, up.TakeOwnership = o.skipSchema, true // see renderUpgrade3
	up.ReuseValues, up.ResetValues, up.ResetThenReuseValues = o.reuseValues, o.resetValues, o.resetThenReuse
	up.Version, up.RepoURL, up.Devel = o.version, o.repo, o.devel
	up.PlainHTTP, up.InsecureSkipTLSVerify, up.PassCredentialsAll = r.plainHTTP, r.insecure, r.passCredentials
	up.CaFile, up.CertFile, up.KeyFile, up.Username, up.Password = r.caFile, r.certFile, r.keyFile, r.username, r.password
	up.Verify, up.Keyring = o.verify, o.keyring
	if o.postRenderer != "" {
		pr, err := o.resolvePostRenderer()
		if err != nil {
			return "", "", err
		}
		up.PostRenderer = pr
	}
	path, err := up.ChartPathOptions.LocateChart(chartRef, settings)
	if err != nil {
		return "", "", inputError{fmt.Errorf("chart %s: %w", chartRef, err)}
	}
	ch, err := loader4.Load(path)
	if err != nil {
		return "", "", inputError{fmt.Errorf("chart %s: %w", chartRef, err)}
	}
	// xref: Helm v4 pkg/cmd/upgrade.go (CheckDependencies, downloader.Manager.Update).
	ac, err := chart4.NewAccessor(ch)
	if err != nil {
		return "", "", inputError{fmt.Errorf("chart %s: %w", chartRef, err)}
	}
	if req := ac.MetaDependencies(); len(req) > 0 {
		if err := action4.CheckDependencies(ch, req); err != nil {
			if !o.dependencyUpdate {
				return "", "", inputError{fmt.Errorf("chart %s: %w (helm upgrade fails the same way; add --dependency-update, or run helm dependency build)", chartRef, err)}
			}
			man := &downloader4.Manager{Out: errOut, ChartPath: path, Keyring: up.ChartPathOptions.Keyring, SkipUpdate: false,
				Getters: getter4.All(settings), RepositoryConfig: settings.RepositoryConfig, RepositoryCache: settings.RepositoryCache,
				ContentCache: settings.ContentCache, RegistryClient: rc}
			if err := man.Update(); err != nil {
				return "", "", inputError{fmt.Errorf("chart %s: --dependency-update: %w", chartRef, err)}
			}
			if ch, err = loader4.Load(path); err != nil {
				return "", "", inputError{fmt.Errorf("chart %s: reloading it after --dependency-update: %w", chartRef, err)}
			}
		}
	}
	vo := values4.Options{ValueFiles: o.valueOpts.ValueFiles, StringValues: o.valueOpts.StringValues, Values: o.valueOpts.Values,
		FileValues: o.valueOpts.FileValues, JSONValues: o.valueOpts.JSONValues, LiteralValues: o.valueOpts.LiteralValues}
	var out [2]string
	for i := range out {
		vals, err := vo.MergeValues(getter4.All(settings))
		if err != nil {
			return "", "", inputError{fmt.Errorf("values: %w", err)}
		}
		var res any
		if install {
			in := action4.NewInstall(cfg)
			in.ReleaseName, in.Namespace = name, o.namespace
			in.DryRunStrategy, in.EnableDNS, in.DisableOpenAPIValidation = up.DryRunStrategy, up.EnableDNS, true
			in.SkipSchemaValidation, in.TakeOwnership, in.PostRenderer = up.SkipSchemaValidation, true, up.PostRenderer
			res, err = in.RunWithContext(ctx, ch, vals)
		} else {
			res, err = up.RunWithContext(ctx, name, ch, vals)
		}
		if err != nil {
			return "", "", inputError{fmt.Errorf("rendering the upgrade of %s/%s with the Helm 4 SDK: %w", o.namespace, name, err)}
		}
		rel, ok := res.(*release4.Release)
		if !ok {
			return "", "", fmt.Errorf("rendering the upgrade of %s/%s: the Helm 4 SDK returned a %T", o.namespace, name, res)
		}
		out[i] = rel.Manifest
	}
	return out[0], out[1], nil
}

// resolvePostRenderer resolves --post-renderer as the two Helms do: a path (it holds a path
// separator) is an executable, as Helm 3 takes it; a name is a Helm 4 postrenderer/v1 plugin
// of that name in Helm 4's plugins directory (HELM_PLUGINS, else HELM_DATA_HOME/plugins), run
// with its runtime config and --post-renderer-args, as Helm 4 runs it; a name no such plugin
// has is an executable on PATH, as Helm 3 finds it. Both kinds have Run(*bytes.Buffer), the
// interface either SDK takes.
func (o *diffOptions) resolvePostRenderer() (postrender.PostRenderer, error) {
	if !strings.ContainsRune(o.postRenderer, filepath.Separator) {
		pr, perr := postrenderer4.NewPostRendererPlugin(helmcli4.New(), o.postRenderer, o.postRendererArgs...)
		if perr == nil {
			return pr, nil
		}
		if _, err := exec.LookPath(o.postRenderer); err != nil {
			return nil, inputError{fmt.Errorf("--post-renderer %s: neither a Helm 4 post-renderer plugin (%v) nor an executable on PATH", o.postRenderer, perr)}
		}
	}
	pr, err := postrender.NewExec(o.postRenderer, o.postRendererArgs...)
	if err != nil {
		return nil, inputError{fmt.Errorf("--post-renderer: %w", err)}
	}
	return pr, nil
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
