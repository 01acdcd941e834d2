package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"
	helmcli "helm.sh/helm/v3/pkg/cli"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/drift"
	"github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// Exit codes of diff.
const (
	// ExitDrift: diff found divergences.
	ExitDrift = 2
	// ExitUnmeasured: diff could not measure (an object or kind unreadable, the API unreachable).
	ExitUnmeasured = 3
)

const diffUsage = `Compares a release's stored manifest with the live cluster, field by field.

Usage:
  helm drift diff release RELEASE [-n NAMESPACE] [-o table|json]

Desired is the manifest Helm stored for the release's latest revision (what helm-controller's
drift detection compares). Every field is classified:
  DIFFERS       chart and cluster both have it, with different values
  CHART-ONLY    the chart states it, the cluster lacks it (a whole object too)
  CLUSTER-ONLY  the cluster has it, the chart does not, and it is not an API-server default
  SHADOWS       an inline env entry hides a key the container also gets from envFrom (prefix
                applied): says whether the two values agree, never the values; counted as
                drift unless they agree
Lists are matched by their merge keys (containers by name, ports by containerPort+protocol).
Ignore rules in Flux's syntax leave fields out: --ignore, --ignore-file, and, for a release a
Flux HelmRelease manages, that HelmRelease's own spec.driftDetection.ignore.
API-server defaults are not drift: this build uses a maintained table of Kubernetes defaults
("normalize: offline"). Labels and annotations Helm, Flux and kubectl add are not drift. A
Secret's values are never printed: its rows say only that they differ.

Not in this build yet: "diff upgrade", --all/-A, server-side dry-run normalisation,
pending-deletion and resolved-by-upgrade flags, yaml/markdown/counts outputs.

Exit codes: 0 no drift; 2 drift found; 3 could not measure (never reported as clean); 1 usage
or other error.
`

type diffOptions struct {
	namespace  string
	output     string
	ignore     []string
	ignoreFile string
	kube       kubeOptions
}

// BindFlags registers the diff flags on fs.
func (o *diffOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	fs.StringVarP(&o.output, "output", "o", "table", "table or json")
	fs.StringArrayVar(&o.ignore, "ignore", nil, "an RFC 6901 JSON pointer to leave out of the comparison in every object, e.g. /spec/replicas; repeatable")
	fs.StringVar(&o.ignoreFile, "ignore-file", "", "a YAML list of ignore rules in Flux's syntax (paths, optional target), as in spec.driftDetection.ignore")
	o.kube.BindFlags(fs)
}

// diffObject is one object of the report.
type diffObject struct {
	// Object names it: "Deployment.apps apps/web".
	Object string `json:"object"`
	// Missing: the chart renders it, the cluster lacks it.
	Missing bool `json:"missing,omitempty"`
	// Compared counts the fields compared; Ignored those divergences ignore rules dropped.
	Compared    int              `json:"compared"`
	Ignored     int              `json:"ignored,omitempty"`
	Divergences []diffDivergence `json:"divergences"`
}

type diffDivergence struct {
	Class   drift.Class `json:"class"`
	Path    string      `json:"path"`
	Pointer string      `json:"pointer"`
	Chart   any         `json:"chart,omitempty"`
	Cluster any         `json:"cluster,omitempty"`
	// Redacted: a Secret's data, whose values are never printed.
	Redacted bool `json:"redacted,omitempty"`
	// Inert: changes nothing in the running pod.
	Inert bool `json:"inert,omitempty"`
	// From and Agree, for SHADOWS: the envFrom source the inline entry hides, and whether
	// the two values agree (absent when they cannot be compared).
	From  string `json:"from,omitempty"`
	Agree *bool  `json:"agree,omitempty"`
}

// diffReport is the JSON output of diff.
type diffReport struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	Normalize string `json:"normalize"`
	// HelmRelease is the Flux HelmRelease that manages the release, whose ignore rules apply.
	HelmRelease string       `json:"helmRelease,omitempty"`
	Divergences int          `json:"divergences"`
	Compared    int          `json:"compared"`
	Objects     []diffObject `json:"objects"`
}

func runDiff(args []string, in io.Reader, out, errOut io.Writer) int {
	var o diffOptions
	fs := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, diffUsage, args, out, errOut); done {
		return code
	}
	if fs.NArg() != 2 || fs.Arg(0) != "release" {
		fmt.Fprintf(errOut, "helm-drift diff: want \"diff release RELEASE\" (diff upgrade is not in this build)\n")
		return ExitError
	}
	if o.output != "table" && o.output != "json" {
		fmt.Fprintf(errOut, "helm-drift diff: --output %q: want table or json\n", o.output)
		return ExitError
	}
	rules, err := o.ignoreRules()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	rep, err := o.diffRelease(fs.Arg(1), rules)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
			return ExitError
		}
	} else {
		printDiffTable(out, rep)
	}
	if rep.Divergences > 0 {
		return ExitDrift
	}
	return ExitOK
}

// ignoreRules reads --ignore and --ignore-file.
func (o *diffOptions) ignoreRules() ([]transform.IgnoreRule, error) {
	var rules []transform.IgnoreRule
	if len(o.ignore) > 0 {
		rules = append(rules, transform.IgnoreRule{Paths: o.ignore})
	}
	if o.ignoreFile != "" {
		data, err := os.ReadFile(o.ignoreFile)
		if err != nil {
			return nil, fmt.Errorf("--ignore-file: %w", err)
		}
		var fromFile []transform.IgnoreRule
		if err := sigsyaml.UnmarshalStrict(data, &fromFile); err != nil {
			return nil, fmt.Errorf("--ignore-file %s: want a YAML list of {paths, target} rules: %v", o.ignoreFile, err)
		}
		rules = append(rules, fromFile...)
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("ignore rule %d: %w", i+1, err)
		}
	}
	return rules, nil
}

// helmReleaseIgnore returns the spec.driftDetection.ignore rules of the Flux HelmRelease that
// manages the release, found through the helm.toolkit.fluxcd.io labels on its live objects;
// none when no HelmRelease does.
func helmReleaseIgnore(ctx context.Context, cl *live.Client, liveObjs []map[string]any) ([]transform.IgnoreRule, string, error) {
	for _, o := range liveObjs {
		md, _ := o["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		name, _ := labels["helm.toolkit.fluxcd.io/name"].(string)
		ns, _ := labels["helm.toolkit.fluxcd.io/namespace"].(string)
		if name == "" || ns == "" {
			continue
		}
		hr, err := cl.Get(ctx, transform.HelmReleaseGroup, "v2", "HelmRelease", ns, name)
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("HelmRelease %s/%s: %w", ns, name, err)
		}
		spec, _ := hr["spec"].(map[string]any)
		dd, _ := spec["driftDetection"].(map[string]any)
		raw, err := json.Marshal(dd["ignore"])
		if err != nil {
			return nil, "", err
		}
		var rules []transform.IgnoreRule
		if err := json.Unmarshal(raw, &rules); err != nil {
			return nil, "", fmt.Errorf("HelmRelease %s/%s: spec.driftDetection.ignore: %w", ns, name, err)
		}
		return rules, ns + "/" + name, nil
	}
	return nil, "", nil
}

func (o *diffOptions) diffRelease(name string, rules []transform.IgnoreRule) (*diffReport, error) {
	settings := helmcli.New()
	settings.KubeConfig, settings.KubeContext = o.kube.kubeconfig, o.kube.kubeContext
	cfg := new(action.Configuration)
	if err := cfg.Init(settings.RESTClientGetter(), o.namespace, os.Getenv("HELM_DRIVER"), func(string, ...any) {}); err != nil {
		return nil, err
	}
	rel, err := action.NewGet(cfg).Run(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", o.namespace, name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*o.kube.timeout)
	defer cancel()
	cl, err := o.kube.connect(ctx)
	if err != nil {
		return nil, err
	}
	s, err := manifest.Split([]byte(rel.Manifest))
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: stored manifest: %w", o.namespace, name, err)
	}
	objs, err := owners.Objects(s)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: stored manifest: %w", o.namespace, name, err)
	}
	checker := owners.NewChecker(objs, owners.Options{Namespace: o.namespace, Scopes: owners.ClusterScopes(cl)})
	rep := &diffReport{Release: name, Namespace: o.namespace, Revision: rel.Version, Normalize: "offline", Objects: []diffObject{}}
	type listKey struct{ group, version, kind, namespace string }
	lists := map[listKey]map[string]map[string]any{}
	type pair struct {
		ob      owners.Object
		id      owners.Identity
		desired map[string]any
		live    map[string]any
	}
	var pairs []pair
	var liveObjs []map[string]any
	for _, ob := range objs {
		if ob.Hook || ob.Name == "" {
			continue
		}
		id := checker.Identity(ob)
		_, version, ok := strings.Cut(ob.APIVersion, "/")
		if !ok {
			version = ob.APIVersion
		}
		k := listKey{id.Group, version, id.Kind, id.Namespace}
		byName, done := lists[k]
		if !done {
			items, err := cl.ListObjects(ctx, k.group, k.version, k.kind, k.namespace)
			if err != nil && !errors.Is(err, live.ErrNotServed) {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			byName = map[string]map[string]any{}
			for _, it := range items {
				if md, ok := it["metadata"].(map[string]any); ok {
					n, _ := md["name"].(string)
					byName[n] = it
				}
			}
			lists[k] = byName
		}
		desired, err := ob.Decode()
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, pair{ob, id, desired, byName[ob.Name]})
		if l := byName[ob.Name]; l != nil {
			liveObjs = append(liveObjs, l)
		}
	}
	hrRules, hrName, err := helmReleaseIgnore(ctx, cl, liveObjs)
	if err != nil {
		return nil, err
	}
	if hrName != "" {
		rep.HelmRelease = hrName
	}
	rules = append(rules, hrRules...)
	for _, p := range pairs {
		ob, id, desired, liveObj := p.ob, p.id, p.desired, p.live
		d := diffObject{Object: id.String(), Divergences: []diffDivergence{}}
		if liveObj == nil {
			d.Missing = true
			d.Compared = 1
			d.Divergences = append(d.Divergences, diffDivergence{Class: drift.ChartOnly, Path: "(whole object)", Pointer: ""})
		} else {
			tm := kyaml.TypeMeta{APIVersion: ob.APIVersion, Kind: ob.Kind}
			chart := drift.Normalize(desired, id.Namespace)
			cluster := drift.Normalize(liveObj, "")
			res := drift.Compare(tm, chart, cluster)
			drift.MarkInert(&res, chart, cluster)
			md, _ := cluster["metadata"].(map[string]any)
			group, version, _ := strings.Cut(ob.APIVersion, "/")
			if !strings.Contains(ob.APIVersion, "/") {
				group, version = "", ob.APIVersion
			}
			d.Ignored = drift.Ignore(&res, rules, drift.Object{Group: group, Version: version, Kind: ob.Kind, Name: ob.Name, Namespace: id.Namespace,
				Labels: stringMapOf(md["labels"]), Annotations: stringMapOf(md["annotations"])})
			d.Compared = res.Compared
			for _, dv := range res.Divergences {
				d.Divergences = append(d.Divergences, diffDivergence{Class: dv.Class, Path: dv.Path, Pointer: dv.Pointer, Chart: dv.Chart, Cluster: dv.Cluster, Redacted: dv.Redacted, Inert: dv.Inert})
			}
			rep.Divergences += len(d.Divergences)
			shadows, err := shadowRows(ctx, cl, ob.Kind, cluster, id.Namespace)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			for _, sh := range shadows {
				if sh.Agree == nil || !*sh.Agree {
					rep.Divergences++ // a hidden value that differs, or cannot be told, is a surprise
				}
				d.Divergences = append(d.Divergences, sh)
			}
		}
		if d.Missing {
			rep.Divergences++
		}
		rep.Compared += d.Compared
		rep.Objects = append(rep.Objects, d)
	}
	sort.SliceStable(rep.Objects, func(i, j int) bool { return rep.Objects[i].Object < rep.Objects[j].Object })
	return rep, nil
}

// shadowRows finds inline env entries of the live workload that hide envFrom keys, reading
// the ConfigMaps and Secrets it names. Values are compared here and never leave.
func shadowRows(ctx context.Context, cl *live.Client, kind string, obj map[string]any, namespace string) ([]diffDivergence, error) {
	path := drift.PodSpecPath(kind)
	if path == nil {
		return nil, nil
	}
	var cur any = obj
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	podSpec, _ := cur.(map[string]any)
	if podSpec == nil {
		return nil, nil
	}
	var readErr error
	source := func(k, name string) (map[string]string, bool) {
		o, err := cl.Get(ctx, "", "v1", k, namespace, name)
		if err != nil {
			if !apierrors.IsNotFound(err) && readErr == nil {
				readErr = fmt.Errorf("%s %s/%s: %w", k, namespace, name, err)
			}
			return nil, false
		}
		data := map[string]string{}
		raw, _ := o["data"].(map[string]any)
		for key, v := range raw {
			str, _ := v.(string)
			if k == "Secret" {
				b, err := base64.StdEncoding.DecodeString(str)
				if err != nil {
					continue
				}
				str = string(b)
			}
			data[key] = str
		}
		return data, true
	}
	var rows []diffDivergence
	for _, sh := range drift.FindShadows(podSpec, strings.Join(path, "."), source) {
		row := diffDivergence{Class: drift.Shadows, Path: sh.Path, From: sh.From, Redacted: sh.Secret}
		if sh.Known {
			agree := sh.Agree
			row.Agree = &agree
		}
		rows = append(rows, row)
	}
	return rows, readErr
}

func stringMapOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

func printDiffTable(w io.Writer, rep *diffReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := 0
	for _, o := range rep.Objects {
		rows += len(o.Divergences)
	}
	if rows > 0 {
		fmt.Fprintln(tw, "OBJECT\tCLASS\tFIELD\tCHART\tCLUSTER")
	}
	for _, o := range rep.Objects {
		for _, d := range o.Divergences {
			chart, cluster := show(d.Chart), show(d.Cluster)
			if d.Redacted {
				chart, cluster = "(secret)", "(secret)"
			}
			if d.Class == drift.Shadows {
				verdict := "values not comparable (valueFrom)"
				if d.Agree != nil && *d.Agree {
					verdict = "values agree"
				} else if d.Agree != nil {
					verdict = "values differ"
				}
				chart, cluster = "inline env", "hides "+d.From+": "+verdict
			}
			field := d.Path
			if d.Inert {
				field += " (inert)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Object, d.Class, field, chart, cluster)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "release %s/%s revision %d: %d divergences across %d compared fields in %d objects (normalize: %s)\n",
		rep.Namespace, rep.Release, rep.Revision, rep.Divergences, rep.Compared, len(rep.Objects), rep.Normalize)
}

func show(v any) string {
	switch t := v.(type) {
	case nil:
		return "-"
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}
