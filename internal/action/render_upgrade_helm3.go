package action

import (
	"context"
	"fmt"
	"strings"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"

	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/kubeapis"
	"github.com/helm-drift/helm-drift/internal/varying"
)

// upgrade3 is the Helm 3 SDK's side.
type upgrade3 struct {
	spec     UpgradeSpec
	stored   stored
	settings *helmcli.EnvSettings
	cfg      *helmaction.Configuration
	up       *helmaction.Upgrade
	rc       *registry.Client
	ch       *chart.Chart
	conf     *Configuration
	// offline: the install was rendered without the cluster (its crds/ kinds not served yet).
	offline bool
}

// upgrade3 makes the Helm 3 SDK's side.
func (c *Configuration) upgrade3(spec UpgradeSpec, st stored) (*upgrade3, error) {
	settings := helmcli.New()
	settings.KubeConfig, settings.KubeContext = spec.Kubeconfig, spec.KubeContext
	settings.SetNamespace(spec.Namespace)
	cfg, err := c.helm3(spec.Namespace, st.reads)
	if err != nil {
		return nil, err
	}
	r := spec.Registry
	rc, err := registryClient(r, spec.Log, settings.RegistryConfig, registryCtors[registry.ClientOption, *registry.Client]{
		registry.ClientOptEnableCache, registry.ClientOptWriter, registry.ClientOptCredentialsFile, registry.ClientOptBasicAuth,
		registry.ClientOptPlainHTTP, registry.ClientOptHTTPClient, registry.NewClient})
	if err != nil {
		return nil, err
	}
	cfg.RegistryClient = rc
	if !spec.Install {
		cfg.KubeClient = unbuilt3{cfg.KubeClient}
	}
	up := helmaction.NewUpgrade(cfg)
	up.SetRegistryClient(rc)
	up.Namespace = spec.Namespace
	up.DryRun, up.DryRunOption = true, "client"
	if spec.Lookup {
		up.DryRunOption = "server"
	}
	up.EnableDNS = spec.EnableDNS
	up.DisableOpenAPIValidation = true
	// Taking ownership changes no byte of the render; whether Helm would refuse an object is
	// the report's to say (REFUSED), not a failed render.
	up.SkipSchemaValidation, up.TakeOwnership = spec.SkipSchemaValidation, true
	up.ReuseValues, up.ResetValues, up.ResetThenReuseValues = spec.ReuseValues, spec.ResetValues, spec.ResetThenReuseValues
	up.Version, up.RepoURL, up.Devel = spec.Version, spec.Repo, spec.Devel
	up.PlainHTTP, up.InsecureSkipTLSverify, up.PassCredentialsAll = r.PlainHTTP, r.Insecure, r.PassCredentials
	up.CaFile, up.CertFile, up.KeyFile, up.Username, up.Password = r.CAFile, r.CertFile, r.KeyFile, r.Username, r.Password
	up.Verify, up.Keyring = spec.Verify, spec.Keyring
	up.PostRenderer = spec.PostRenderer
	return &upgrade3{spec: spec, stored: st, settings: settings, cfg: cfg, up: up, rc: rc, conf: c}, nil
}

func (u *upgrade3) locate(ref string) (string, error) {
	return u.up.ChartPathOptions.LocateChart(ref, u.settings)
}

func (u *upgrade3) load(path string) (err error) {
	u.ch, err = loader.Load(path)
	return err
}

func (u *upgrade3) missingDependencies() error {
	if req := u.ch.Metadata.Dependencies; req != nil {
		return helmaction.CheckDependencies(u.ch, req)
	}
	return nil
}

func (u *upgrade3) updateDependencies(path string) error {
	man := &downloader.Manager{Out: u.spec.Log, ChartPath: path, Keyring: u.up.ChartPathOptions.Keyring, SkipUpdate: false,
		Getters: getter.All(u.settings), RepositoryConfig: u.settings.RepositoryConfig, RepositoryCache: u.settings.RepositoryCache,
		RegistryClient: u.rc}
	return man.Update()
}

func (u *upgrade3) renderedOffline() bool { return u.offline }

func (u *upgrade3) variance() (varying.Analysis, bool) {
	vals, err := u.spec.Values.MergeValues(getter.All(u.settings))
	if err != nil {
		return varying.Analysis{}, false
	}
	templates, texts := varying.ChartTree3(u.ch)
	return varying.AnalyzeChart(templates, texts, vals, u.stored.previous), true
}

func (u *upgrade3) keep(names map[string]bool) { varying.Keep3(u.ch, names) }

func (u *upgrade3) crds() string {
	var b strings.Builder
	for _, c := range u.ch.CRDObjects() {
		helmcontroller.WriteCRD(&b, c.Filename, c.File.Data)
	}
	return b.String()
}

func (u *upgrade3) render(ctx context.Context) (string, renderInputs, error) {
	// Values merged afresh each time: the SDK may change the map it is given.
	vals, err := u.spec.Values.MergeValues(getter.All(u.settings))
	if err != nil {
		return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
	}
	var rel *release.Release
	if u.spec.Install {
		in := helmaction.NewInstall(u.cfg)
		in.ReleaseName, in.Namespace = u.spec.Release, u.spec.Namespace
		in.DryRun, in.DryRunOption = true, u.up.DryRunOption
		in.EnableDNS, in.DisableOpenAPIValidation = u.up.EnableDNS, true
		in.SkipSchemaValidation, in.TakeOwnership, in.PostRenderer = u.up.SkipSchemaValidation, true, u.up.PostRenderer
		if u.conf == nil {
			// No cluster: helm template's install (cmd/helm/template.go).
			in.ClientOnly, in.Replace, in.DryRunOption = true, true, "client"
			if u.spec.KubeVersion != "" {
				if in.KubeVersion, err = chartutil.ParseKubeVersion(u.spec.KubeVersion); err != nil {
					return "", renderInputs{}, &InputError{fmt.Errorf("kube version %q: %w", u.spec.KubeVersion, err)}
				}
			}
			if in.APIVersions, err = kubeapis.Offered(u.spec.KubeVersion, u.spec.APIVersions); err != nil {
				return "", renderInputs{}, &InputError{err}
			}
		}
		rel, err = in.RunWithContext(ctx, u.ch, vals)
		if err != nil && u.conf != nil && crdsNotServed(err) && u.crds() != "" {
			// The install's own crds/ are not served yet, so its custom resources cannot be
			// mapped on a dry run (helm install --dry-run=server fails the same way; the real
			// install creates the CRDs first): rendered without the cluster.
			if vals, err = u.spec.Values.MergeValues(getter.All(u.settings)); err != nil {
				return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
			}
			cfg, cerr := u.conf.helm3(u.spec.Namespace, u.stored.reads)
			if cerr != nil {
				return "", renderInputs{}, cerr
			}
			off := helmaction.NewInstall(cfg)
			off.ReleaseName, off.Namespace, off.DryRun, off.ClientOnly, off.Replace = u.spec.Release, u.spec.Namespace, true, true, true
			off.EnableDNS, off.DisableOpenAPIValidation, off.SkipSchemaValidation, off.PostRenderer = u.up.EnableDNS, true, u.up.SkipSchemaValidation, u.up.PostRenderer
			kv := ""
			if sv, kerr := u.conf.kubeVersion(); kerr == nil {
				off.KubeVersion = &chartutil.KubeVersion{Version: sv.GitVersion, Major: sv.Major, Minor: sv.Minor}
				kv = sv.GitVersion
			}
			// As the install: its crds/ created first, then the capabilities read.
			off.APIVersions, _ = kubeapis.Offered(kv, kubeapis.CRDServesIn([]byte(u.crds())))
			rel, err = off.RunWithContext(ctx, u.ch, vals)
			u.offline = err == nil
		}
	} else {
		rel, err = u.up.RunWithContext(ctx, u.spec.Release, u.ch, vals)
	}
	if err != nil {
		return "", renderInputs{}, &InputError{fmt.Errorf("rendering the upgrade of %s/%s: %w", u.spec.Namespace, u.spec.Release, err)}
	}
	return rel.Manifest, inputs3(rel.Chart, rel.Config), nil
}
