package action

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	action4 "helm.sh/helm/v4/pkg/action"
	chart4 "helm.sh/helm/v4/pkg/chart"
	loader4 "helm.sh/helm/v4/pkg/chart/loader"
	helmcli4 "helm.sh/helm/v4/pkg/cli"
	values4 "helm.sh/helm/v4/pkg/cli/values"
	downloader4 "helm.sh/helm/v4/pkg/downloader"
	getter4 "helm.sh/helm/v4/pkg/getter"
	registry4 "helm.sh/helm/v4/pkg/registry"
	release4 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/kubeapis"
	"github.com/helm-drift/helm-drift/internal/varying"
)

// upgrade4 is the Helm 4 SDK's side, as "helm upgrade" of the Helm 4 CLI renders.
type upgrade4 struct {
	spec     UpgradeSpec
	stored   stored
	settings *helmcli4.EnvSettings
	cfg      *action4.Configuration
	up       *action4.Upgrade
	rc       *registry4.Client
	ch       chart4.Charter
	conf     *Configuration
	// offline: the install was rendered without the cluster (its crds/ kinds not served yet).
	offline bool
}

// upgrade4 makes the Helm 4 SDK's side.
func (c *Configuration) upgrade4(spec UpgradeSpec, st stored) (*upgrade4, error) {
	cfg, err := c.helm4(spec.Namespace, st.reads)
	if err != nil {
		return nil, err
	}
	settings := helmcli4.New()
	settings.KubeConfig, settings.KubeContext = spec.Kubeconfig, spec.KubeContext
	settings.SetNamespace(spec.Namespace)
	r := spec.Registry
	rc, err := registryClient(r, spec.Log, settings.RegistryConfig, registryCtors[registry4.ClientOption, *registry4.Client]{
		registry4.ClientOptEnableCache, registry4.ClientOptWriter, registry4.ClientOptCredentialsFile, registry4.ClientOptBasicAuth,
		registry4.ClientOptPlainHTTP, registry4.ClientOptHTTPClient, registry4.NewClient})
	if err != nil {
		return nil, err
	}
	cfg.RegistryClient = rc
	if !spec.Install {
		cfg.KubeClient = unbuilt4{cfg.KubeClient}
	}
	up := action4.NewUpgrade(cfg)
	up.SetRegistryClient(rc)
	up.Namespace = spec.Namespace
	up.DryRunStrategy = action4.DryRunClient
	if spec.Lookup {
		up.DryRunStrategy = action4.DryRunServer
	}
	up.EnableDNS = spec.EnableDNS
	up.DisableOpenAPIValidation = true
	up.SkipSchemaValidation, up.TakeOwnership = spec.SkipSchemaValidation, true // see upgrade3
	up.ReuseValues, up.ResetValues, up.ResetThenReuseValues = spec.ReuseValues, spec.ResetValues, spec.ResetThenReuseValues
	up.Version, up.RepoURL, up.Devel = spec.Version, spec.Repo, spec.Devel
	up.PlainHTTP, up.InsecureSkipTLSVerify, up.PassCredentialsAll = r.PlainHTTP, r.Insecure, r.PassCredentials
	up.CaFile, up.CertFile, up.KeyFile, up.Username, up.Password = r.CAFile, r.CertFile, r.KeyFile, r.Username, r.Password
	up.Verify, up.Keyring = spec.Verify, spec.Keyring
	if spec.PostRenderer != nil {
		up.PostRenderer = spec.PostRenderer
	}
	return &upgrade4{spec: spec, stored: st, settings: settings, cfg: cfg, up: up, rc: rc, conf: c}, nil
}

func (u *upgrade4) locate(ref string) (string, error) {
	return u.up.ChartPathOptions.LocateChart(ref, u.settings)
}

func (u *upgrade4) load(path string) (err error) {
	u.ch, err = loader4.Load(path)
	return err
}

func (u *upgrade4) missingDependencies() error {
	ac, err := chart4.NewAccessor(u.ch)
	if err != nil {
		return err
	}
	if req := ac.MetaDependencies(); len(req) > 0 {
		return action4.CheckDependencies(u.ch, req)
	}
	return nil
}

func (u *upgrade4) updateDependencies(path string) error {
	man := &downloader4.Manager{Out: u.spec.Log, ChartPath: path, Keyring: u.up.ChartPathOptions.Keyring, SkipUpdate: false,
		Getters: getter4.All(u.settings), RepositoryConfig: u.settings.RepositoryConfig, RepositoryCache: u.settings.RepositoryCache,
		ContentCache: u.settings.ContentCache, RegistryClient: u.rc}
	return man.Update()
}

func (u *upgrade4) renderedOffline() bool { return u.offline }

func (u *upgrade4) variance() (varying.Analysis, bool) {
	ch, ok := u.ch.(*chartv2.Chart)
	if !ok {
		return varying.Analysis{}, false // a chart API other than v2 (Helm 4's v3 charts)
	}
	v := u.spec.Values
	vo := values4.Options{ValueFiles: v.ValueFiles, StringValues: v.StringValues, Values: v.Values,
		FileValues: v.FileValues, JSONValues: v.JSONValues, LiteralValues: v.LiteralValues}
	vals, err := vo.MergeValues(getter4.All(u.settings))
	if err != nil {
		return varying.Analysis{}, false
	}
	templates, texts := varying.ChartTree4(ch)
	return varying.AnalyzeChart(templates, texts, vals, u.stored.previous), true
}

func (u *upgrade4) keep(names map[string]bool) {
	if ch, ok := u.ch.(*chartv2.Chart); ok {
		u.ch = varying.Cut4(ch, names)
	}
}

func (u *upgrade4) crds() string {
	ch, ok := u.ch.(*chartv2.Chart)
	if !ok {
		return "" // a chart API other than v2 (Helm 4's v3 charts): none read
	}
	return helmcontroller.ChartCRDs(ch)
}

func (u *upgrade4) render(ctx context.Context) (string, renderInputs, error) {
	v := u.spec.Values
	vo := values4.Options{ValueFiles: v.ValueFiles, StringValues: v.StringValues, Values: v.Values,
		FileValues: v.FileValues, JSONValues: v.JSONValues, LiteralValues: v.LiteralValues}
	vals, err := vo.MergeValues(getter4.All(u.settings))
	if err != nil {
		return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
	}
	var res any
	if u.spec.Install {
		in := action4.NewInstall(u.cfg)
		in.ReleaseName, in.Namespace = u.spec.Release, u.spec.Namespace
		in.DryRunStrategy, in.EnableDNS, in.DisableOpenAPIValidation = u.up.DryRunStrategy, u.up.EnableDNS, true
		in.SkipSchemaValidation, in.TakeOwnership, in.PostRenderer = u.up.SkipSchemaValidation, true, u.up.PostRenderer
		if u.conf == nil {
			// No cluster: helm template's install (pkg/cmd/template.go).
			in.DryRunStrategy, in.Replace = action4.DryRunClient, true
			if u.spec.KubeVersion != "" {
				if in.KubeVersion, err = common.ParseKubeVersion(u.spec.KubeVersion); err != nil {
					return "", renderInputs{}, &InputError{fmt.Errorf("kube version %q: %w", u.spec.KubeVersion, err)}
				}
			}
			if in.APIVersions, err = kubeapis.Offered(u.spec.KubeVersion, u.spec.APIVersions); err != nil {
				return "", renderInputs{}, &InputError{err}
			}
		}
		res, err = in.RunWithContext(ctx, u.ch, vals)
		if err != nil && u.conf != nil && crdsNotServed(err) && u.crds() != "" {
			// As upgrade3.render: the install's crds/ kinds are not served yet.
			if vals, err = vo.MergeValues(getter4.All(u.settings)); err != nil {
				return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
			}
			cfg, cerr := u.conf.helm4(u.spec.Namespace, u.stored.reads)
			if cerr != nil {
				return "", renderInputs{}, cerr
			}
			off := action4.NewInstall(cfg)
			off.ReleaseName, off.Namespace, off.DryRunStrategy, off.Replace = u.spec.Release, u.spec.Namespace, action4.DryRunClient, true
			off.EnableDNS, off.DisableOpenAPIValidation, off.SkipSchemaValidation, off.PostRenderer = u.up.EnableDNS, true, u.up.SkipSchemaValidation, u.up.PostRenderer
			kv := ""
			if sv, kerr := u.conf.kubeVersion(); kerr == nil {
				off.KubeVersion = &common.KubeVersion{Version: sv.GitVersion, Major: sv.Major, Minor: sv.Minor}
				kv = sv.GitVersion
			}
			// As the install: its crds/ created first, then the capabilities read.
			off.APIVersions, _ = kubeapis.Offered(kv, kubeapis.CRDServesIn([]byte(u.crds())))
			res, err = off.RunWithContext(ctx, u.ch, vals)
			u.offline = err == nil
		}
	} else {
		res, err = u.up.RunWithContext(ctx, u.spec.Release, u.ch, vals)
	}
	if err != nil {
		return "", renderInputs{}, &InputError{fmt.Errorf("rendering the upgrade of %s/%s with the Helm 4 SDK: %w", u.spec.Namespace, u.spec.Release, err)}
	}
	rel, ok := res.(*release4.Release)
	if !ok {
		return "", renderInputs{}, fmt.Errorf("rendering the upgrade of %s/%s: the Helm 4 SDK returned a %T", u.spec.Namespace, u.spec.Release, res)
	}
	return rel.Manifest, inputs4(rel.Chart, rel.Config), nil
}
