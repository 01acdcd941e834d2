package action

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	kube3 "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	action4 "helm.sh/helm/v4/pkg/action"
	chart4 "helm.sh/helm/v4/pkg/chart"
	loader4 "helm.sh/helm/v4/pkg/chart/loader"
	helmcli4 "helm.sh/helm/v4/pkg/cli"
	values4 "helm.sh/helm/v4/pkg/cli/values"
	downloader4 "helm.sh/helm/v4/pkg/downloader"
	getter4 "helm.sh/helm/v4/pkg/getter"
	kube4 "helm.sh/helm/v4/pkg/kube"
	postrenderer4 "helm.sh/helm/v4/pkg/postrenderer"
	registry4 "helm.sh/helm/v4/pkg/registry"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/stable"
)

// Registry reaches a chart repository or OCI registry, with helm upgrade's flags.
type Registry struct {
	PlainHTTP, Insecure, PassCredentials bool
	CAFile, CertFile, KeyFile            string
	Username, Password                   string
}

// HTTPClient is the client for the registry's TLS settings; nil when there are none.
func (r Registry) HTTPClient() (*http.Client, error) {
	if r.CertFile == "" && r.KeyFile == "" && r.CAFile == "" && !r.Insecure {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: r.Insecure} //nolint:gosec // asked for with --insecure-skip-tls-verify
	if r.CertFile != "" || r.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file/--key-file: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", r.CAFile)
		}
		conf.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf, Proxy: http.ProxyFromEnvironment}}, nil
}

// UpgradeSpec is what "helm upgrade RELEASE CHART" is asked: every flag that changes what it
// renders, as either Helm SDK takes it.
type UpgradeSpec struct {
	Release, Namespace string
	// Chart is the chart reference, as helm upgrade takes it.
	Chart string
	// Install renders the install of a release that does not exist (helm upgrade --install).
	Install bool
	// Values are the values flags (-f, --set, ...).
	Values values.Options
	// Version, Repo and Devel locate the chart.
	Version, Repo string
	Devel         bool
	// Registry reaches the chart's registry or repository.
	Registry Registry
	// Verify checks the chart's provenance against Keyring.
	Verify  bool
	Keyring string
	// Lookup answers the chart's lookup from the cluster (a server dry run); else nothing.
	Lookup               bool
	EnableDNS            bool
	SkipSchemaValidation bool
	// ReuseValues, ResetValues and ResetThenReuseValues are helm upgrade's.
	ReuseValues, ResetValues, ResetThenReuseValues bool
	// DependencyUpdate fetches dependencies missing from charts/, as helm upgrade
	// --dependency-update; without it a missing one fails, as helm upgrade fails.
	DependencyUpdate bool
	// PostRenderer, when set, post-renders both renders (ResolvePostRenderer).
	PostRenderer postrender.PostRenderer
	// Kubeconfig and KubeContext are the Helm settings' (the chart and registry lookups).
	Kubeconfig, KubeContext string
	// Log receives what the registry and the dependency update print.
	Log io.Writer

	// previous are the values the release was last installed or upgraded with: texts tpl may
	// be given (--reuse-values).
	previous map[string]any
	// reads answers the renders' reads of the release's storage (DiffUpgrade.Run shares
	// them with its own); nil: the storage does.
	reads *releaseReads
}

// upgradeSDK is one Helm SDK's side of the upgrade render; renderUpgrade calls it in order.
type upgradeSDK interface {
	// locate finds the chart and returns its local path.
	locate(chart string) (string, error)
	// load reads the chart at path.
	load(path string) error
	// missingDependencies says which dependencies are missing from charts/ (nil: none).
	missingDependencies() error
	// updateDependencies fetches them into the chart directory, as helm does.
	updateDependencies(path string) error
	// renderedOffline reports whether an install had to be rendered without the cluster (its
	// crds/ kinds are not served yet).
	renderedOffline() bool
	// crds returns the CRDs of the chart's crds/ directories (its dependencies' too), as one
	// manifest.
	crds() string
	// steady reads the loaded chart's templates (see package stable); ok is false for a chart
	// it cannot read.
	steady() (a stable.Analysis, ok bool)
	// keep leaves in the loaded chart only the templates named.
	keep(names map[string]bool)
	// render renders the upgrade (or install) once, its values merged afresh, and returns the
	// manifest and the render's inputs (the caller digests them where it compares them).
	render(ctx context.Context) (string, renderInputs, error)
}

// Render is the upgrade rendered twice: what differs between Manifest and Again is unstable.
// Inputs is the digest of the render's chart and user-supplied values (see renderInputs).
type Render struct {
	Manifest, Again, Inputs string
	// CRDs are the chart's crds/ CRDs, which Helm creates on install and never upgrades.
	CRDs string
	// Offline: an install rendered without the cluster, its crds/ kinds not served yet (lookup
	// answered nothing).
	Offline bool
}

// RenderUpgrade renders what the upgrade would install twice with the Helm SDK engine
// ("helm3" or "helm4"), as a dry run that still talks to the cluster for lookup, as the real
// upgrade would: what differs between the two renders is unstable.
func (c *Configuration) RenderUpgrade(ctx context.Context, engine string, spec UpgradeSpec) (*Render, error) {
	newSDK := func() (upgradeSDK, error) {
		if engine == "helm4" {
			return c.upgrade4(spec)
		}
		return c.upgrade3(spec)
	}
	sdk, err := newSDK()
	if err != nil {
		return nil, err
	}
	return renderUpgrade(ctx, sdk, newSDK, spec)
}

// unbuilt3 and unbuilt4 are the Helm SDKs' kube clients for both renders of an upgrade, which
// build no objects. On a dry run the SDK builds the new manifest's objects three times (to
// validate it, and with the stored manifest's to find the objects to adopt) and GETs each new
// one, only to refuse the upgrade: a kind the cluster does not serve (the one refusal left
// with TakeOwnership, which the renders set: whether Helm would adopt an object is the
// report's to say). buildable makes that check from the manifests for a fraction of the cost;
// on a 1,000-object release the builds were the largest part of a render's memory, and on a
// chart with large CRDs a fifth of its time. An install is left as it is: whether its crds/
// kinds are served decides how it renders (see upgrade3.render).
type (
	unbuilt3 struct{ kube3.Interface }
	unbuilt4 struct{ kube4.Interface }
)

// Build builds nothing.
func (unbuilt3) Build(io.Reader, bool) (kube3.ResourceList, error) { return nil, nil }

// Build builds nothing.
func (unbuilt4) Build(io.Reader, bool) (kube4.ResourceList, error) { return nil, nil }

// renderUpgrade is the flow both SDKs share: locate and load the chart, check its
// dependencies as helm upgrade does (fetch them with DependencyUpdate), render twice.
// xref: Helm v3 cmd/helm/upgrade.go, Helm v4 pkg/cmd/upgrade.go (CheckDependencies,
// downloader.Manager.Update).
//
// The two renders run at the same time, the second on the SDK side twin makes: the
// Helm SDKs change the chart they render (its dependencies, processed against the values) and
// their action's configuration, so the second render has its own, the chart loaded again from
// the path the first located (no second download or dependency update).
func renderUpgrade(ctx context.Context, sdk upgradeSDK, twin func() (upgradeSDK, error), spec UpgradeSpec) (*Render, error) {
	path, err := sdk.locate(spec.Chart)
	if err != nil {
		return nil, &InputError{fmt.Errorf("chart %s: %w", spec.Chart, err)}
	}
	if err := sdk.load(path); err != nil {
		return nil, &InputError{fmt.Errorf("chart %s: %w", spec.Chart, err)}
	}
	if err := sdk.missingDependencies(); err != nil {
		if !spec.DependencyUpdate {
			return nil, &InputError{fmt.Errorf("chart %s: %w (helm upgrade fails the same way; add --dependency-update, or run helm dependency build)", spec.Chart, err)}
		}
		if err := sdk.updateDependencies(path); err != nil {
			return nil, &InputError{fmt.Errorf("chart %s: --dependency-update: %w", spec.Chart, err)}
		}
		if err := sdk.load(path); err != nil {
			return nil, &InputError{fmt.Errorf("chart %s: reloading it after --dependency-update: %w", spec.Chart, err)}
		}
	}
	r := &Render{}
	second, err := twin()
	if err != nil {
		return nil, err
	}
	var (
		again      error
		twinned    string
		rerendered map[string]string // nil: the twin renders every template
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		// The twin loads its own copy of the chart (the SDKs change the chart they render)
		// while the first render runs, and renders again only what can render differently.
		if again = second.load(path); again != nil {
			again = &InputError{fmt.Errorf("chart %s: %w", spec.Chart, again)}
			return
		}
		if spec.PostRenderer == nil { // a post-renderer is given the whole manifest
			if a, ok := second.steady(); ok && !a.All {
				if len(a.Rerender) == 0 {
					rerendered = a.Rerender
					return
				}
				second.keep(a.Keep)
				if twinned, _, again = second.render(ctx); again == nil {
					rerendered = a.Rerender
					return
				}
				// Not expected: render the whole chart again, as without the analysis.
				if again = second.load(path); again != nil {
					again = &InputError{fmt.Errorf("chart %s: %w", spec.Chart, again)}
					return
				}
			}
		}
		twinned, _, again = second.render(ctx)
	})
	var inputs renderInputs
	r.Manifest, inputs, err = sdk.render(ctx)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	r.Again = twinned
	if rerendered != nil {
		r.Again = r.Manifest
		if len(rerendered) > 0 {
			r.Again = splice(r.Manifest, twinned, rerendered)
		}
	}
	r.Inputs = inputs.digest()
	// The chart's crds/ as the render left it: the SDK drops the dependencies a condition or
	// tag disables, and helm install installs the crds/ of those that are left.
	r.CRDs = sdk.crds()
	if again != nil {
		return nil, again
	}
	r.Offline = sdk.renderedOffline()
	return r, nil
}

// upgrade3 is the Helm 3 SDK's side.
type upgrade3 struct {
	spec     UpgradeSpec
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
func (c *Configuration) upgrade3(spec UpgradeSpec) (*upgrade3, error) {
	settings := helmcli.New()
	settings.KubeConfig, settings.KubeContext = spec.Kubeconfig, spec.KubeContext
	settings.SetNamespace(spec.Namespace)
	cfg, err := c.helm3(spec.Namespace, spec.reads)
	if err != nil {
		return nil, err
	}
	r := spec.Registry
	opts := []registry.ClientOption{registry.ClientOptEnableCache(true), registry.ClientOptWriter(spec.Log),
		registry.ClientOptCredentialsFile(settings.RegistryConfig), registry.ClientOptBasicAuth(r.Username, r.Password)}
	if r.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	hc, err := r.HTTPClient()
	if err != nil {
		return nil, &InputError{err}
	}
	if hc != nil {
		opts = append(opts, registry.ClientOptHTTPClient(hc))
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return nil, &InputError{err}
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
	return &upgrade3{spec: spec, settings: settings, cfg: cfg, up: up, rc: rc, conf: c}, nil
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

func (u *upgrade3) steady() (stable.Analysis, bool) {
	vals, err := u.spec.Values.MergeValues(getter.All(u.settings))
	if err != nil {
		return stable.Analysis{}, false
	}
	templates, texts := chartTree3(u.ch)
	return analyze(templates, texts, vals, u.spec.previous), true
}

func (u *upgrade3) keep(names map[string]bool) { keep3(u.ch, names) }

func (u *upgrade3) crds() string {
	var b strings.Builder
	for _, c := range u.ch.CRDObjects() {
		writeCRD(&b, c.Filename, c.File.Data)
	}
	return b.String()
}

// writeCRD writes one crds/ file as documents of a manifest.
func writeCRD(b *strings.Builder, filename string, data []byte) {
	fmt.Fprintf(b, "---\n# Source: %s\n%s\n", filename, strings.TrimSpace(string(data)))
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
		rel, err = in.RunWithContext(ctx, u.ch, vals)
		if err != nil && crdsNotServed(err) && u.crds() != "" {
			// The install's own crds/ are not served yet, so its custom resources cannot be
			// mapped on a dry run (helm install --dry-run=server fails the same way; the real
			// install creates the CRDs first): rendered without the cluster.
			if vals, err = u.spec.Values.MergeValues(getter.All(u.settings)); err != nil {
				return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
			}
			cfg, cerr := u.conf.helm3(u.spec.Namespace, u.spec.reads)
			if cerr != nil {
				return "", renderInputs{}, cerr
			}
			off := helmaction.NewInstall(cfg)
			off.ReleaseName, off.Namespace, off.DryRun, off.ClientOnly, off.Replace = u.spec.Release, u.spec.Namespace, true, true, true
			off.EnableDNS, off.DisableOpenAPIValidation, off.SkipSchemaValidation, off.PostRenderer = u.up.EnableDNS, true, u.up.SkipSchemaValidation, u.up.PostRenderer
			if kv, kerr := u.conf.kubeVersion(); kerr == nil {
				off.KubeVersion = &chartutil.KubeVersion{Version: kv.GitVersion, Major: kv.Major, Minor: kv.Minor}
			}
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

// upgrade4 is the Helm 4 SDK's side, as "helm upgrade" of the Helm 4 CLI renders.
type upgrade4 struct {
	spec     UpgradeSpec
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
func (c *Configuration) upgrade4(spec UpgradeSpec) (*upgrade4, error) {
	cfg, err := c.helm4(spec.Namespace, spec.reads)
	if err != nil {
		return nil, err
	}
	settings := helmcli4.New()
	settings.KubeConfig, settings.KubeContext = spec.Kubeconfig, spec.KubeContext
	settings.SetNamespace(spec.Namespace)
	r := spec.Registry
	opts := []registry4.ClientOption{registry4.ClientOptEnableCache(true), registry4.ClientOptWriter(spec.Log),
		registry4.ClientOptCredentialsFile(settings.RegistryConfig), registry4.ClientOptBasicAuth(r.Username, r.Password)}
	if r.PlainHTTP {
		opts = append(opts, registry4.ClientOptPlainHTTP())
	}
	hc, err := r.HTTPClient()
	if err != nil {
		return nil, &InputError{err}
	}
	if hc != nil {
		opts = append(opts, registry4.ClientOptHTTPClient(hc))
	}
	rc, err := registry4.NewClient(opts...)
	if err != nil {
		return nil, &InputError{err}
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
	return &upgrade4{spec: spec, settings: settings, cfg: cfg, up: up, rc: rc, conf: c}, nil
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

func (u *upgrade4) steady() (stable.Analysis, bool) {
	ch, ok := u.ch.(*chartv2.Chart)
	if !ok {
		return stable.Analysis{}, false // a chart API other than v2 (Helm 4's v3 charts)
	}
	v := u.spec.Values
	vo := values4.Options{ValueFiles: v.ValueFiles, StringValues: v.StringValues, Values: v.Values,
		FileValues: v.FileValues, JSONValues: v.JSONValues, LiteralValues: v.LiteralValues}
	vals, err := vo.MergeValues(getter4.All(u.settings))
	if err != nil {
		return stable.Analysis{}, false
	}
	templates, texts := chartTree4(ch)
	return analyze(templates, texts, vals, u.spec.previous), true
}

func (u *upgrade4) keep(names map[string]bool) {
	if ch, ok := u.ch.(*chartv2.Chart); ok {
		u.ch = cut4(ch, names)
	}
}

func (u *upgrade4) crds() string {
	ch, ok := u.ch.(*chartv2.Chart)
	if !ok {
		return "" // a chart API other than v2 (Helm 4's v3 charts): none read
	}
	return chartCRDs(ch)
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
		res, err = in.RunWithContext(ctx, u.ch, vals)
		if err != nil && crdsNotServed(err) && u.crds() != "" {
			// As upgrade3.render: the install's crds/ kinds are not served yet.
			if vals, err = vo.MergeValues(getter4.All(u.settings)); err != nil {
				return "", renderInputs{}, &InputError{fmt.Errorf("values: %w", err)}
			}
			cfg, cerr := u.conf.helm4(u.spec.Namespace, u.spec.reads)
			if cerr != nil {
				return "", renderInputs{}, cerr
			}
			off := action4.NewInstall(cfg)
			off.ReleaseName, off.Namespace, off.DryRunStrategy, off.Replace = u.spec.Release, u.spec.Namespace, action4.DryRunClient, true
			off.EnableDNS, off.DisableOpenAPIValidation, off.SkipSchemaValidation, off.PostRenderer = u.up.EnableDNS, true, u.up.SkipSchemaValidation, u.up.PostRenderer
			if kv, kerr := u.conf.kubeVersion(); kerr == nil {
				off.KubeVersion = &common.KubeVersion{Version: kv.GitVersion, Major: kv.Major, Minor: kv.Minor}
			}
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

// ResolvePostRenderer resolves --post-renderer as the two Helms do: a path (it holds a path
// separator) is an executable, as Helm 3 takes it; a name is a Helm 4 postrenderer/v1 plugin
// of that name in Helm 4's plugins directory (HELM_PLUGINS, else HELM_DATA_HOME/plugins), run
// with its runtime config and args, as Helm 4 runs it; a name no such plugin has is an
// executable on PATH, as Helm 3 finds it. Both kinds have Run(*bytes.Buffer), the interface
// either SDK takes.
func ResolvePostRenderer(name string, args []string) (postrender.PostRenderer, error) {
	if !strings.ContainsRune(name, filepath.Separator) {
		pr, perr := postrenderer4.NewPostRendererPlugin(helmcli4.New(), name, args...)
		if perr == nil {
			return pr, nil
		}
		if _, err := exec.LookPath(name); err != nil {
			return nil, &InputError{fmt.Errorf("--post-renderer %s: neither a Helm 4 post-renderer plugin (%v) nor an executable on PATH", name, perr)}
		}
	}
	pr, err := postrender.NewExec(name, args...)
	if err != nil {
		return nil, &InputError{fmt.Errorf("--post-renderer: %w", err)}
	}
	return pr, nil
}

// crdsNotServed tells the dry-run failure of an install whose custom resources' kinds are not
// served yet ("resource mapping not found ... ensure CRDs are installed first").
func crdsNotServed(err error) bool {
	return strings.Contains(err.Error(), "resource mapping not found") || strings.Contains(err.Error(), "ensure CRDs are installed first")
}

// upgradable makes, on an upgrade's render and the stored manifest, the checks of the real
// upgrade's builds, which the renders' SDKs no longer make (see unbuilt3), in Helm's order:
// the new manifest, then the stored one.
func (c *Configuration) upgradable(render, stored string) error {
	if err := c.buildable(render, "new"); err != nil {
		return err
	}
	return c.buildable(stored, "current")
}

// buildable checks what the Helm SDK's build of a manifest's objects checks on a real upgrade
// (which stops it): that the cluster serves the kind of every object. which is "new" (the
// render, which Helm validates first and reports bare) or "current" (the stored manifest:
// "unable to build kubernetes objects from current release manifest: ...").
// xref: Helm v3 pkg/action/upgrade.go performUpgrade, Helm v4 the same; cli-runtime
// resource.Builder (mappingFor).
func (c *Configuration) buildable(text, which string) error {
	wrap := func(err error) error {
		if which == "new" {
			return err
		}
		return fmt.Errorf("unable to build kubernetes objects from %s release manifest: %w", which, err)
	}
	st, err := manifest.Split([]byte(text))
	if err != nil {
		return wrap(err)
	}
	objs, err := manifest.Objects(st)
	if err != nil {
		return wrap(err)
	}
	served := map[schema.GroupVersionKind]error{}
	for _, o := range objs {
		if o.Hook {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
		err, seen := served[gvk]
		if !seen {
			_, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			served[gvk] = err
		}
		switch {
		case err == nil:
		case meta.IsNoMatchError(err):
			return wrap(fmt.Errorf("resource mapping not found for name: %q namespace: %q from \"\": no matches for kind %q in version %q; ensure CRDs are installed first",
				o.Name, o.Namespace, o.Kind, o.APIVersion))
		default:
			return wrap(fmt.Errorf("%s %s: %w", o.Kind, o.Name, err))
		}
	}
	return nil
}
