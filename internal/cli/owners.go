package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
)

// ExitUnchecked: a check could not look (an unreadable file, an unreachable cluster); never
// reported as clean.
const ExitUnchecked = 3

const ownersUsage = `Finds objects with two owners, before Helm applies anything, in rendered manifests (the files
given, or stdin): two documents that are one object (duplicate-identity), two HelmReleases that
write one Helm release (two-writers-of-release); Helm hooks are left out. With --cluster (and
--release), also live objects another release, a Flux HelmRelease or a release no longer
installed owns; with --deep, objects the charts of two HelmReleases render, each chart rendered
as helm-controller would. The same check runs inside render (--owners error|warn|off).

Usage:
  helm template rel ./chart | helm drift owners -n apps
  helm drift owners -n apps rendered.yaml other.yaml -o json
  helm template web ./chart -n apps | helm drift owners -n apps --release web --cluster

Exit codes: 0 no finding of severity error; 1 findings of severity error (or a usage error);
3 could not check (an unreadable file, an unreachable cluster, a chart not rendered): never
reported as clean.
Every finding, --deep's sources, the RBAC: ` + docsURL + `owners.md
`

// ownersOptions are the flags of `owners`.
type ownersOptions struct {
	namespace string
	release   string
	output    string
	cluster   bool
	deep      bool
	chartDirs []string
	kube      kubeOptions
}

// BindFlags registers the owners flags on fs.
func (o *ownersOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace: namespaced objects that name none land there")
	fs.StringVar(&o.release, "release", "", "the release the manifests are rendered for (named in messages)")
	fs.StringVarP(&o.output, "output", "o", "text", "text or json")
	fs.BoolVar(&o.cluster, "cluster", false, "also compare with the live cluster: objects another release, no release, or a Flux HelmRelease owns (needs --release)")
	fs.BoolVar(&o.deep, "deep", false, "render each HelmRelease's chart the way helm-controller would and find objects two releases render")
	fs.StringArrayVar(&o.chartDirs, "chart-dir", nil, "NAME=PATH: with --deep, the chart of HelmRelease NAME (namespace/name or name) or of chart NAME is at PATH; repeatable")
	o.kube.BindFlags(fs)
}

// ownersReport is the JSON output of `owners -o json`.
type ownersReport struct {
	// Findings, each with id, severity, object, owners and message.
	Findings []owners.Finding `json:"findings"`
	// Notes are facts worth knowing that are not findings (kinds assumed namespaced).
	Notes []string `json:"notes"`
	// Objects is how many objects were checked.
	Objects int `json:"objects"`
}

func runOwners(args []string, in io.Reader, out, errOut io.Writer) int {
	var o ownersOptions
	fs := pflag.NewFlagSet("owners", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, ownersUsage, args, out, errOut); done {
		return code
	}
	if o.output != "text" && o.output != "json" {
		fmt.Fprintf(errOut, "helm-drift owners: --output %q: want text or json\n", o.output)
		return ExitError
	}
	var objs []manifest.Object
	inputs := fs.Args()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, name := range inputs {
		data, err := readNamed(name, in)
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift owners: %v\n", err)
			return ExitUnchecked
		}
		s, err := manifest.Split(data)
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift owners: %s: %v\n", displayName(name), err)
			return ExitUnchecked
		}
		found, err := manifest.Objects(s)
		if err != nil {
			fmt.Fprintf(errOut, "helm-drift owners: %s: %v\n", displayName(name), err)
			return ExitUnchecked
		}
		if len(inputs) > 1 {
			for i := range found {
				found[i].File = displayName(name)
			}
		}
		objs = append(objs, found...)
	}
	if o.cluster && o.release == "" {
		fmt.Fprintf(errOut, "helm-drift owners: --cluster needs --release NAME: it tells this release's objects from another's\n")
		return ExitError
	}
	checks := action.Owners{Options: owners.Options{Namespace: o.namespace, Release: o.release}, Cluster: o.cluster, Deep: o.deep, ChartDirs: o.chartDirs, Kube: o.kube.connection()}
	c, findings, err := checks.Run(objs)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift owners: %v\n", err)
		return ExitUnchecked
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		rep := ownersReport{Findings: findings, Notes: c.Notes, Objects: len(objs)}
		if rep.Findings == nil {
			rep.Findings = []owners.Finding{}
		}
		if rep.Notes == nil {
			rep.Notes = []string{}
		}
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(errOut, "helm-drift owners: %v\n", err)
			return ExitError
		}
	} else {
		printFindings(out, findings, c.Notes)
		if len(findings) == 0 {
			fmt.Fprintf(out, "no second owners among %d objects\n", len(objs))
		}
	}
	if owners.HasErrors(findings) {
		return ExitError
	}
	return ExitOK
}

// printFindings writes findings and notes as text, one paragraph each.
func printFindings(w io.Writer, findings []owners.Finding, notes []string) {
	for _, f := range findings {
		fmt.Fprintf(w, "%s: %s: %s\n", f.Severity, f.ID, f.Message)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// readNamed reads a file, or stdin for "-".
func readNamed(name string, in io.Reader) ([]byte, error) {
	if name == "-" {
		return readInput(in)
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: give the rendered manifest files", name)
	}
	if st.Size() > MaxInput {
		return nil, fmt.Errorf("%s: more than %d MiB", name, MaxInput>>20)
	}
	return os.ReadFile(name)
}

// ownersMode is render's --owners value.
type ownersMode string

func (m ownersMode) validate() error {
	switch m {
	case "error", "warn", "off":
		return nil
	}
	return fmt.Errorf("--owners %q: want error, warn or off", string(m))
}
