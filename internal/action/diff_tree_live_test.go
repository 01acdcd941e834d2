package action

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
	livepkg "github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

func TestLiveAt(t *testing.T) {
	live := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "x"}}}}}
	for _, c := range []struct {
		name string
		row  diff.Row
		want string
	}{
		{"the head's value", diff.Row{Pointer: "/spec/replicas", Chart: float64(3), Cluster: float64(2)}, diff.LiveHead},
		{"the base's value", diff.Row{Pointer: "/spec/replicas", Chart: float64(4), Cluster: float64(3)}, diff.LiveBase},
		{"another value", diff.Row{Pointer: "/spec/replicas", Chart: float64(4), Cluster: float64(2)}, diff.LiveOther},
		{"added by the head, absent", diff.Row{Pointer: "/spec/paused", Chart: true}, diff.LiveBase},
		{"removed by the head, absent", diff.Row{Pointer: "/spec/paused", Cluster: true}, diff.LiveHead},
		{"added by the head, another value there", diff.Row{Pointer: "/spec/template/metadata/labels/tier", Chart: "web"}, diff.LiveOther},
	} {
		if got := liveAt(live, &c.row); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSecretLive(t *testing.T) {
	side := func(text string) manifest.Object {
		objs, err := objectsOf(text)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%v %d", err, len(objs))
		}
		return objs[0]
	}
	base := side("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: one-1}\n")
	head := side("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: dHdvLTI=}\n") // two-2
	for _, c := range []struct{ live, want string }{
		{"b25lLTE=", diff.LiveBase},  // one-1: same size as the head's, told apart by value
		{"dHdvLTI=", diff.LiveHead},  // two-2
		{"b3RoZXI=", diff.LiveOther}, // other
	} {
		live := map[string]any{"data": map[string]any{"password": c.live}}
		if got := secretLive(live, head, base, "data.password"); got != c.want {
			t.Errorf("live %s: %q, want %q", c.live, got, c.want)
		}
	}
}

// TestMarkLiveAddedObject: an object the head adds is, in the cluster, absent (the base's
// state), there as the head renders it (with what the API server and Helm add), or another
// object of that name.
func TestMarkLiveAddedObject(t *testing.T) {
	head, err := objectsOf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier, labels: {app: web}}\ndata: {tier: prod}\n")
	if err != nil {
		t.Fatal(err)
	}
	there := func(tier string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "tier", "namespace": "apps",
			"uid": "1", "resourceVersion": "7", "labels": map[string]any{"app": "web", "app.kubernetes.io/managed-by": "Helm"},
			"annotations": map[string]any{"meta.helm.sh/release-name": "web"}}, "data": map[string]any{"tier": tier}}
	}
	for name, c := range map[string]struct {
		live map[string]any
		want string
	}{
		"not there yet":      {nil, diff.LiveBase},
		"no kind for it yet": {map[string]any{"notServed": true}, diff.LiveBase},
		"there, the head's":  {there("prod"), diff.LiveHead},
		"another one":        {there("dev"), diff.LiveOther},
	} {
		rep := &diff.Report{Objects: []diff.Object{{Object: "ConfigMap apps/tier", Missing: true, Rows: []diff.Row{{Path: "(whole object)"}}}}}
		markLive(context.Background(), rep, head, nil, "apps", getterOf(c.live))
		if got := rep.Objects[0].Rows[0].Live; got != c.want {
			t.Errorf("%s: %q, want %q (%s)", name, got, c.want, rep.Objects[0].Rows[0].Why)
		}
	}
}

// getterOf answers every Get with obj, or NotFound when it is nil, or that the cluster does not
// serve the kind when it is {notServed: true}.
type getterOf map[string]any

func (g getterOf) Get(_ context.Context, group, _, kind, _, name string) (map[string]any, error) {
	if g == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind) + "s"}, name)
	}
	if g["notServed"] == true {
		return nil, fmt.Errorf("%s.%s: %w", kind, group, livepkg.ErrNotServed)
	}
	return g, nil
}

// countingCluster is a cluster that holds nothing and counts the reads of objects a release
// holds (not of the HelmCharts, which live with their HelmReleases).
type countingCluster struct{ reads int }

func (c *countingCluster) Get(_ context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	if kind != "HelmChart" {
		c.reads++
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind)}, name)
}

// TestLiveRemoteRelease: under --live, a HelmRelease installed in another cluster
// (spec.kubeConfig) is not compared with this one: its rows have no live value, nothing of
// the cluster is read for them, and a note says why; one of this cluster is compared.
func TestLiveRemoteRelease(t *testing.T) {
	hr := func(kubeConfig, replicas string) string {
		return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 1h
` + kubeConfig + `  chart:
    spec: {chart: ./chart, sourceRef: {kind: GitRepository, name: fleet, namespace: apps}}
  values: {replicas: ` + replicas + `}
`
	}
	files := func(kubeConfig, replicas string) map[string]string {
		return map[string]string{
			"chart/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"chart/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {replicas: {{ .Values.replicas | quote }}}\n",
			"clusters/a/flux.yaml":        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: apps}\nspec: {url: https://git.example.com/fleet.git, interval: 1h, ref: {branch: main}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: fleet, namespace: apps}\nspec: {interval: 1h, path: ./clusters/a, prune: true, sourceRef: {kind: GitRepository, name: fleet}}\n",
			"clusters/a/helmrelease.yaml": hr(kubeConfig, replicas),
		}
	}
	for _, tc := range []struct {
		name, kubeConfig, note string
		reads                  bool
	}{
		{"this cluster", "", "", true},
		{"a Secret's kubeconfig", "  kubeConfig: {secretRef: {name: spoke}}\n", "HelmRelease apps/web is installed in another cluster (spec.kubeConfig: the kubeconfig of Secret apps/spoke)", false},
		{"a ConfigMap's cluster", "  kubeConfig: {configMapRef: {name: spoke}}\n", "HelmRelease apps/web is installed in another cluster (spec.kubeConfig: the cluster of ConfigMap apps/spoke)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, head := writeDir(t, files(tc.kubeConfig, "1")), writeDir(t, files(tc.kubeConfig, "2"))
			cluster := &countingCluster{}
			d := &DiffTree{Repo: head, Base: base, Head: head, KubeVersion: "v1.34.2", Live: cluster,
				Tree: fluxtree.Options{Sources: []string{"apps/fleet"}}}
			res, err := d.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 1 || res.Rows[0].Report == nil || len(res.Rows[0].Report.Objects) == 0 {
				t.Fatalf("want web's report with its rows: %+v %v", res.Rows, res.Problems)
			}
			notes := strings.Join(res.Notes, "\n")
			if tc.note != "" && !strings.Contains(notes, tc.note) || tc.note == "" && strings.Contains(notes, "another cluster") {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			if (cluster.reads > 0) != tc.reads {
				t.Errorf("%d reads of the cluster; want some: %v", cluster.reads, tc.reads)
			}
			for _, o := range res.Rows[0].Report.Objects {
				for _, r := range o.Rows {
					if (r.Live != "") != tc.reads {
						t.Errorf("%s %s: live %q", o.Object, r.Path, r.Live)
					}
				}
			}
		})
	}
}

// clusterOf is a cluster that holds objects ("Kind/namespace/name") and nothing else.
type clusterOf map[string]map[string]any

func (c clusterOf) Get(_ context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	if o, ok := c[kind+"/"+namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind)}, name)
}

// ListObjects lists the objects of kind in namespace.
func (c clusterOf) ListObjects(_ context.Context, _, _, kind, namespace string) ([]map[string]any, error) {
	var out []map[string]any
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if strings.HasPrefix(k, kind+"/"+namespace+"/") {
			out = append(out, c[k])
		}
	}
	return out, nil
}

// TestLiveSubstituteFromCluster: under --live, a postBuild.substituteFrom ConfigMap or Secret
// the tree does not hold is read from the cluster, as kustomize-controller reads it: the
// HelmRelease is previewed with its values (the Secret's never shown), the variables named as
// the cluster's; one the tree holds is the tree's, even where the cluster holds another.
func TestLiveSubstituteFromCluster(t *testing.T) {
	const secret = "s3cr3t-from-the-cluster"
	files := func(replicas string) map[string]string {
		return map[string]string{
			"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {replicas: {{ .Values.replicas | quote }}, site: {{ .Values.site | quote }}, token: {{ .Values.token | quote }}, tier: {{ .Values.tier | quote }}}\n",
			"clusters/a/flux.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: apps}\nspec: {url: https://git.example.com/fleet.git, interval: 1h, ref: {branch: main}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: fleet, namespace: apps}\nspec: {interval: 1h, path: ./clusters/a, prune: true, sourceRef: {kind: GitRepository, name: fleet}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: web, namespace: apps}\nspec:\n  interval: 1h\n  path: ./apps\n  prune: true\n  sourceRef: {kind: GitRepository, name: fleet}\n" +
				"  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: settings}, {kind: Secret, name: secrets}, {kind: ConfigMap, name: tiers}]\n",
			// tiers is the tree's: the cluster's copy says otherwise, and is not read.
			"clusters/a/tiers.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tiers, namespace: apps}\ndata: {tier: gold}\n",
			"apps/hr.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  interval: 1h\n" +
				"  chart:\n    spec: {chart: ./chart, sourceRef: {kind: GitRepository, name: fleet, namespace: apps}}\n" +
				"  values: {replicas: " + replicas + ", site: \"${site}\", token: \"${token}\", tier: \"${tier}\"}\n",
		}
	}
	base, head := writeDir(t, files("1")), writeDir(t, files("2"))
	cluster := clusterOf{
		"ConfigMap/apps/settings": {"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"site": "example.com"}},
		"Secret/apps/secrets":     {"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(secret))}},
		"ConfigMap/apps/tiers":    {"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"tier": "bronze"}},
	}
	d := &DiffTree{Repo: head, Base: base, Head: head, KubeVersion: "v1.34.2", Live: cluster,
		Tree: fluxtree.Options{Sources: []string{"apps/fleet"}, Outside: cluster}}
	res, err := d.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 || len(res.Rows) != 1 || res.Rows[0].Report == nil {
		t.Fatalf("want web's report, no problem: %+v %v", res.Rows, res.Problems)
	}
	rep := res.Rows[0].Report
	var rows []string
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			rows = append(rows, o.Object+" "+r.Path)
		}
	}
	if strings.Join(rows, ",") != "ConfigMap apps/web data.replicas" {
		t.Errorf("rows %v, want the replicas alone (the variables the same on both sides)", rows)
	}
	if data, _ := json.Marshal(res); strings.Contains(string(data), secret) {
		t.Errorf("the preview shows the cluster's Secret's value")
	}
	// The head as read: the cluster's site and token, the tree's tier; the variables named.
	tree, err := fluxtree.Load(context.Background(), head, fluxtree.Options{Sources: []string{"apps/fleet"}, Outside: cluster, Work: t.TempDir()})
	if err != nil || len(tree.HelmReleases) != 1 {
		t.Fatalf("%v %v", err, tree)
	}
	h := tree.HelmReleases[0]
	values := h.Object["spec"].(map[string]any)["values"].(map[string]any)
	if values["site"] != "example.com" || values["token"] != secret || values["tier"] != "gold" {
		t.Errorf("values %v: want the cluster's site and token, the tree's tier", values)
	}
	if from := h.Vars["site"].From; from != "ConfigMap apps/settings (in the cluster)" {
		t.Errorf("${site} from %q", from)
	}
	if !slices.Contains(h.SecretVars, secret) {
		t.Errorf("the cluster's Secret's value is not withheld: %v", len(h.SecretVars))
	}
}

// TestLiveResourceSetProviders: under --live, a ResourceSet whose inputs come from a
// ResourceSetInputProvider (one per open pull request, say) is built with the input sets the
// cluster's provider exports: a pull request that edits its template previews the change in
// each HelmRelease it makes. Without the cluster, it is named as not measured.
func TestLiveResourceSetProviders(t *testing.T) {
	files := func(replicas string) map[string]string {
		return map[string]string{
			"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {replicas: {{ .Values.replicas | quote }}, branch: {{ .Values.branch | quote }}}\n",
			"clusters/a/flux.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: apps}\nspec: {url: https://git.example.com/fleet.git, interval: 1h, ref: {branch: main}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: fleet, namespace: apps}\nspec: {interval: 1h, path: ./clusters/a, prune: true, sourceRef: {kind: GitRepository, name: fleet}}\n",
			"clusters/a/previews.yaml": `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: previews, namespace: apps}
spec:
  inputsFrom: [{kind: ResourceSetInputProvider, name: prs}]
  resources:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      metadata: {name: 'preview-<< inputs.id >>', namespace: apps}
      spec:
        interval: 1h
        chart:
          spec: {chart: ./chart, sourceRef: {kind: GitRepository, name: fleet, namespace: apps}}
        values: {replicas: ` + replicas + `, branch: '<< inputs.branch >>'}
`,
		}
	}
	base, head := writeDir(t, files("1")), writeDir(t, files("2"))
	cluster := clusterOf{"ResourceSetInputProvider/apps/prs": {"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSetInputProvider",
		"status": map[string]any{"exportedInputs": []any{map[string]any{"id": "12", "branch": "fix-a"}, map[string]any{"id": "15", "branch": "feat-b"}}}}}
	d := &DiffTree{Repo: head, Base: base, Head: head, KubeVersion: "v1.34.2", Live: cluster,
		Tree: fluxtree.Options{Sources: []string{"apps/fleet"}, Outside: cluster}}
	res, err := d.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range res.Rows {
		if r.Report != nil {
			for _, o := range r.Report.Objects {
				for _, row := range o.Rows {
					rows = append(rows, r.HelmRelease+": "+o.Object+" "+row.Path)
				}
			}
		}
	}
	want := "apps/preview-12: ConfigMap apps/preview-12 data.replicas,apps/preview-15: ConfigMap apps/preview-15 data.replicas"
	if len(res.Problems) > 0 || len(res.Unmeasured) > 0 || strings.Join(rows, ",") != want {
		t.Errorf("rows %v (problems %v, unmeasured %v), want %s", rows, res.Problems, res.Unmeasured, want)
	}

	// The providers selected by label: those the cluster lists with it.
	for _, dir := range []string{base, head} {
		p := filepath.Join(dir, "clusters/a/previews.yaml")
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), "inputsFrom: [{kind: ResourceSetInputProvider, name: prs}]", "inputsFrom: [{selector: {matchLabels: {preview: 'true'}}}]", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cluster["ResourceSetInputProvider/apps/prs"]["metadata"] = map[string]any{"name": "prs", "namespace": "apps", "labels": map[string]any{"preview": "true"}}
	cluster["ResourceSetInputProvider/apps/tags"] = map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSetInputProvider",
		"metadata": map[string]any{"name": "tags", "namespace": "apps"},
		"status":   map[string]any{"exportedInputs": []any{map[string]any{"id": "99", "branch": "v1"}}}}
	if res, err = d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows = nil
	for _, r := range res.Rows {
		rows = append(rows, r.HelmRelease)
	}
	if strings.Join(rows, ",") != "apps/preview-12,apps/preview-15" || len(res.Unmeasured) > 0 {
		t.Errorf("selected by label: %v (unmeasured %v), want the labelled provider's two", rows, res.Unmeasured)
	}

	d = &DiffTree{Repo: head, Base: base, Head: head, KubeVersion: "v1.34.2", Tree: fluxtree.Options{Sources: []string{"apps/fleet"}}}
	if res, err = d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 0 || len(res.Unmeasured) != 1 || !strings.Contains(res.Unmeasured[0], "ResourceSet apps/previews") || !strings.Contains(res.Unmeasured[0], "--live reads them") {
		t.Errorf("without the cluster: rows %v, unmeasured %v; want the ResourceSet named as not measured", res.Rows, res.Unmeasured)
	}
}
