package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	"github.com/helm-drift/helm-drift/internal/output"
	"github.com/helm-drift/helm-drift/internal/sops"
	sigsyaml "sigs.k8s.io/yaml"
)

const diffTreeUsage = `Previews a pull request to a Flux repository with no cluster and no credentials: every
HelmRelease the repository applies, rendered at the base and at the head as helm-controller
will render it, compared object by object and field by field.

Usage:
  helm drift diff tree [PATH...] --base REV|DIR [--head REV|DIR] [flags]

The tree is read as Flux reads it: each Flux Kustomization built as kustomize-controller
builds it (overlays, patches, components, targetNamespace, postBuild substitutions from the
tree's ConfigMaps and Secrets), ExternalArtifacts made by their ArtifactGenerator's copy rules,
then each HelmRelease rendered with its chart, values, valuesFrom and post-renderers; lookup
answers empty. PATHs (relative to the repository's root; default: all of it) limit where
Kustomizations and HelmReleases are looked for. Only the HelmReleases whose inputs changed
are rendered (--all: every one). Charts come from their sources, through --chart-source
mirrors, cached on disk. Each row says what caused it and what helm-controller will do.
Exit codes: 0 no change, 2 changes, 3 something could not be read or rendered (named on
stderr, never shown as "no change"), 1 an error.

Examples:
  helm drift diff tree --base origin/main
  helm drift diff tree clusters/production --base main --head HEAD -o github
  helm drift diff tree --base main --chart-source https://charts.example.com=oci://mirror:5000/charts

Sources, mirrors, the cache, the CI step: ` + docsURL + `diff-tree.md
`

// diffTreeCmd is "diff tree": a Flux repository, base against head, with no cluster.
type diffTreeCmd struct {
	diffCommon
	tree         action.DiffTree
	chartSources []string
	substitute   []string
	cache        string
	buildCache   string
	sopsKeys     string
	pgpKeys      []string
	live         bool
}

func (d *diffTreeCmd) usage() string { return diffTreeUsage }

func (d *diffTreeCmd) bind(fs *pflag.FlagSet) {
	d.diffCommon.bind(fs, false)
	fs.StringVar(&d.tree.Base, "base", "", "the revision the change starts from: a Git revision (main, origin/main, a commit) or a directory (required)")
	fs.StringVar(&d.tree.Head, "head", "", "the revision the change brings: a Git revision or a directory (default: the working tree)")
	fs.BoolVar(&d.tree.All, "all", false, "render every HelmRelease, not only those whose inputs (the HelmRelease, its values sources, its chart's source, the Kustomization and variables that make it) changed")
	fs.StringVar(&d.tree.KubeVersion, "kube-version", "", "the Kubernetes version the charts see (.Capabilities.KubeVersion), as helm template takes it; Kubernetes' own API versions are offered as its API server serves them by default (default: the Helm SDK's, client-go's version)")
	fs.StringSliceVar(&d.tree.APIVersions, "api-versions", nil, "API versions the charts see as available (.Capabilities.APIVersions), as helm template takes them, beside those Kubernetes serves at --kube-version (with their kinds), those of the CRDs the tree applies and those of the chart's crds/; repeatable")
	fs.StringArrayVar(&d.chartSources, "chart-source", nil, "FROM=TO: read the charts of a source URL (HelmRepository, OCIRepository) from a mirror URL or a local directory instead, e.g. https://charts.example.com=oci://mirror:5000/charts; a Bucket's (https://ENDPOINT/BUCKET) from a local copy of it only; repeatable")
	fs.StringVar(&d.cache, "chart-cache", "", "the directory charts are kept in between runs, by source, chart and version (default: $XDG_CACHE_HOME/helm-drift/charts, else ~/.cache/helm-drift/charts; off: none)")
	fs.StringVar(&d.buildCache, "build-cache", "", "the directory the revisions extracted and the kustomize builds are kept in between runs, by what they read, so that a run rebuilds only what changed (default: $XDG_CACHE_HOME/helm-drift/builds, else ~/.cache/helm-drift/builds; off: none)")
	fs.BoolVar(&d.tree.Tree.NoRemoteBases, "no-remote-bases", false, "refuse a kustomization's remote bases (git URLs), as kustomize-controller run with --no-remote-bases does; by default they are cloned, as it clones them")
	fs.StringArrayVar(&d.tree.Tree.Sources, "source", nil, "a GitRepository (NAMESPACE/NAME) that is this repository at the revision previewed, beside the bootstrap one and those of its origin's URL that follow the bootstrap's branch; repeatable")
	fs.StringArrayVar(&d.substitute, "substitute", nil, "NAME=VALUE: a substitution variable from outside the repository, for a postBuild.substituteFrom the tree does not hold; repeatable")
	fs.BoolVar(&d.tree.Charts.PlainHTTP, "plain-http", false, "reach OCI registries over plain HTTP")
	fs.StringVar(&d.sopsKeys, "sops-age-key-file", "", "age identities (AGE-SECRET-KEY-1... lines) to decrypt the SOPS-encrypted objects of the Kustomizations whose spec.decryption.provider is sops, as kustomize-controller does with its decryption keys (default: $SOPS_AGE_KEY_FILE, and the keys in $SOPS_AGE_KEY; none: they are never decrypted)")
	fs.StringArrayVar(&d.pgpKeys, "sops-pgp-key-file", nil, "armored OpenPGP private keys (gpg --export-secret-keys --armor, the *.asc entries of a decryption Secret), without a passphrase, to decrypt what was encrypted for them, as --sops-age-key-file; repeatable")
	fs.BoolVar(&d.live, "live", false, "add the cluster (the kubeconfig's) as a third side: each row says whether the cluster already has the head's value, still has the base's, or holds another (drift the merge overwrites)")
	d.kube.BindOneClusterFlags(fs)
	fs.BoolVar(&d.tree.CountUnstable, "count-unstable", false, "count as changes the fields on which two renders of the same inputs disagree (random values, timestamps); by default they are flagged unstable and not counted")
	for _, name := range treeRefused {
		_ = fs.MarkHidden(name)
	}
}

// treeRefused are the shared diff flags that ask about a cluster, which diff tree never reads.
var treeRefused = []string{"namespace", "normalize", "stats", "suggest-ignore"}

// defaultCache is $XDG_CACHE_HOME/helm-drift/NAME (~/.cache/helm-drift/NAME), "" when the
// system names no cache directory.
func defaultCache(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "helm-drift", name)
}

func (d *diffTreeCmd) validate(fs *pflag.FlagSet) error {
	if err := d.diffCommon.validate(false); err != nil {
		return err
	}
	for _, name := range treeRefused {
		if fs.Changed(name) {
			return fmt.Errorf("--%s: diff tree reads no cluster; the namespaces are the tree's, and objects are normalised offline", name)
		}
	}
	if !d.live {
		for _, name := range []string{"kubeconfig", "kube-context", "request-timeout"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s goes with --live: diff tree reads no cluster without it", name)
			}
		}
	} else if err := d.kube.oneCluster(); err != nil {
		return err
	}
	if d.tree.Base == "" {
		return fmt.Errorf("diff tree needs --base: the revision (main, origin/main, a commit) or directory the change starts from")
	}
	for _, s := range d.chartSources {
		m, err := helmcontroller.ParseMirror(s)
		if err != nil {
			return err
		}
		d.tree.Charts.Mirrors = append(d.tree.Charts.Mirrors, m)
	}
	for _, s := range d.tree.Tree.Sources {
		if ns, name, ok := strings.Cut(s, "/"); !ok || ns == "" || name == "" {
			return fmt.Errorf("--source %q: want NAMESPACE/NAME of a GitRepository", s)
		}
	}
	if len(d.substitute) > 0 {
		d.tree.Tree.Vars = map[string]string{}
	}
	for _, s := range d.substitute {
		n, v, ok := strings.Cut(s, "=")
		if !ok || n == "" {
			return fmt.Errorf("--substitute %q: want NAME=VALUE", s)
		}
		d.tree.Tree.Vars[n] = v
	}
	switch d.cache {
	case "off":
	case "":
		if dir := defaultCache("charts"); dir != "" {
			d.tree.Charts.Cache = &helmcontroller.ChartCache{Dir: dir}
		}
	default:
		d.tree.Charts.Cache = &helmcontroller.ChartCache{Dir: d.cache}
	}
	switch d.buildCache {
	case "off":
	case "":
		d.tree.Cache = defaultCache("builds")
	default:
		d.tree.Cache = d.buildCache
	}
	ids, err := sops.LoadIdentities(d.sopsKeys)
	if err != nil {
		return fmt.Errorf("--sops-age-key-file: %w", err)
	}
	if ids.PGP, err = sops.LoadPGP(d.pgpKeys); err != nil {
		return fmt.Errorf("--sops-pgp-key-file: %w", err)
	}
	d.tree.Tree.SOPS = ids
	d.tree.Workers = max(1, d.measure.Workers/4)
	d.tree.Views = d.measure.Views
	return nil
}

func (d *diffTreeCmd) run(ctx context.Context, fs *pflag.FlagSet, in io.Reader, out, errOut io.Writer) int {
	collectForRenders()
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	d.tree.Repo = action.RepositoryRoot(wd)
	d.tree.Tree.Paths = fs.Args()[1:]
	for _, p := range d.tree.Tree.Paths {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			fmt.Fprintf(errOut, "helm-drift diff: PATH %q: want a path inside the repository, relative to its root %s\n", p, d.tree.Repo)
			return ExitError
		}
	}
	d.tree.Views = d.measure.Views
	if d.live {
		cfg, code, ok := d.connect(ctx, errOut)
		if !ok {
			return code
		}
		cl, err := cfg.Live(ctx)
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
			return ExitUnmeasured
		}
		d.tree.Live = cl
		d.tree.Tree.Outside = cl // substituteFrom objects the tree does not hold
	}
	res, err := d.tree.Run(ctx)
	if isInputError(err) {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not compare: %v\n", err)
		return ExitUnmeasured
	}
	s := res.Summary
	for _, p := range res.Problems {
		s.Unmeasured = append(s.Unmeasured, "the "+p)
	}
	headline := fmt.Sprintf("%s against %s: %d HelmReleases compared, %d unchanged (inputs identical, not rendered; --all renders them)",
		res.Head, res.Base, len(res.Rows), res.Unchanged)
	if d.tree.All {
		headline = fmt.Sprintf("%s against %s: %d HelmReleases rendered, %d of them with the same inputs on both sides (rendered once)",
			res.Head, res.Base, len(res.Rows), res.Unchanged)
	}
	fmt.Fprintf(errOut, "helm-drift diff tree: %s\n", headline)
	for _, n := range res.Notes {
		fmt.Fprintf(errOut, "helm-drift diff tree: note: %s\n", n)
	}
	// A pull request's comment says them too: it is read without the job's log.
	d.out.problems, d.out.notes = res.Problems, append([]string{headline}, res.Notes...)
	name := func(r diff.SummaryRow) string {
		n := "HelmRelease " + r.HelmRelease
		if r.Context != "" {
			n = r.Context + ": " + n
		}
		return n
	}
	if f := d.out.format; f == "json" || f == "yaml" {
		return d.writeTree(res, &s, name, out, errOut)
	}
	code := d.writeSummary(&s, nil, name, out, errOut)
	if f := d.out.format; f == "table" || f == "markdown" {
		// The rows' own reports follow the summary: a preview is read for its fields.
		for _, r := range res.Rows {
			if r.Report == nil || r.Report.Divergences+len(r.Report.Prune)+r.Report.Unstable == 0 && len(r.Report.Causes) == 0 {
				continue
			}
			fmt.Fprintf(out, "\n%s\n", name(r))
			if err := output.WriteReport(out, r.Report, f, d.out.options(out)); err != nil {
				fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
				return ExitError
			}
		}
	}
	return code
}

// treeDocument is diff tree's -o json and -o yaml: the two sides, what was not compared, and
// each HelmRelease's summary row with its whole report.
type treeDocument struct {
	Base         string         `json:"base"`
	Head         string         `json:"head"`
	Unchanged    int            `json:"unchanged"`
	Problems     []string       `json:"problems"`
	Notes        []string       `json:"notes"`
	HelmReleases []treeDocEntry `json:"helmReleases"`
}

// treeDocEntry is one HelmRelease of a tree diff.
type treeDocEntry struct {
	diff.SummaryRow
	Report *diff.Report `json:"report,omitempty"`
}

// writeTree prints the tree document and returns the exit code the summary would.
func (d *diffTreeCmd) writeTree(res *action.TreeResult, s *action.Summary, name func(diff.SummaryRow) string, out, errOut io.Writer) int {
	doc := treeDocument{Base: res.Base, Head: res.Head, Unchanged: res.Unchanged, Problems: append([]string{}, res.Problems...), Notes: append([]string{}, res.Notes...),
		HelmReleases: []treeDocEntry{}}
	tallies := []diff.Tally{}
	for _, r := range res.Rows {
		doc.HelmReleases = append(doc.HelmReleases, treeDocEntry{SummaryRow: r, Report: r.Report})
		tallies = append(tallies, r.Tally())
	}
	for _, g := range sameErrors(res.Rows, name) {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", g.who, g.err)
	}
	for _, u := range s.Unmeasured {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s\n", u)
		tallies = append(tallies, diff.Tally{Failed: true})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err == nil && d.out.format == "yaml" {
		data, err = sigsyaml.JSONToYAML(data)
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if _, err := fmt.Fprintf(out, "%s\n", strings.TrimSuffix(string(data), "\n")); err != nil {
		return ExitError
	}
	return exitCode(d.exitOn, tallies...)
}
