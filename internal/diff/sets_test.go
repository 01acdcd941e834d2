package diff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/output"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

func objectsOf(t *testing.T, text string) []manifest.Object {
	t.Helper()
	s, err := manifest.Split([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Objects(s)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// setRows are a report's rows as "object|class|path|chart|other", its prunes as "prune object".
func setRows(rep *diff.Report) []string {
	var out []string
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			out = append(out, strings.Join([]string{o.Object, string(r.Class), r.Path, printed(r.Chart), printed(r.Cluster)}, "|"))
		}
	}
	for _, p := range rep.Prune {
		out = append(out, "prune "+p.Object)
	}
	sort.Strings(out)
	return out
}

func printed(v any) string {
	if v == nil {
		return "-"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCompareSets: two renders compared with no cluster, by the measurement's rules: a value
// changed, an entry added to a keyed list, an object created and one deleted; what the API
// server would fill in on either side (a port's protocol, a probe's defaults) is no change; a
// Secret's value is never printed, only that it changed.
func TestCompareSets(t *testing.T) {
	const base = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        env: [{name: A, value: "1"}]
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: BASE-SECRET-MARKER}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: old}
data: {a: b}`
	const head = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.28
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080, protocol: TCP}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {password: SEVBRC1TRUNSRVQtTUFSS0VS}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: new}
data: {a: b}`
	rep, err := diff.CompareSets(objectsOf(t, base), objectsOf(t, head), diff.SetOptions{Release: "web", Namespace: "apps", Views: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap apps/new|CHART-ONLY|(whole object)|-|-",
		"Deployment.apps apps/web|CHART-ONLY|spec.template.spec.containers[name=web].env[name=B]|{\"name\":\"B\",\"value\":\"2\"}|-",
		"Deployment.apps apps/web|DIFFERS|spec.replicas|3|2",
		"Deployment.apps apps/web|DIFFERS|spec.template.spec.containers[name=web].image|nginx:1.28|nginx:1.27",
		"Secret apps/creds|DIFFERS|data.password|-|-",
		"prune ConfigMap apps/old",
	}
	if got := setRows(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.Divergences != 5 || rep.Changes != 5 || rep.DriftRows != 0 {
		t.Errorf("divergences %d, changes %d, drift %d; want 5, 5, 0", rep.Divergences, rep.Changes, rep.DriftRows)
	}
	for _, format := range []string{"table", "json", "yaml", "markdown", "diff"} {
		var b bytes.Buffer
		if err := output.WriteReport(&b, rep, format, output.Options{Context: 3}); err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{"BASE-SECRET-MARKER", "HEAD-SECRET-MARKER", "SEVBRC1TRUNSRVQtTUFSS0VS"} {
			if strings.Contains(b.String(), leak) {
				t.Errorf("-o %s printed a Secret's value:\n%s", format, b.String())
			}
		}
	}
}

// TestCompareSetsCorpus: a render of each public chart of the corpus compared with itself
// changes nothing, and with its documents in reverse order neither (objects pair by identity).
func TestCompareSetsCorpus(t *testing.T) {
	dir, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Skipf("corpus: %s not found (it sits beside the checkout in CI)", dir)
	}
	rendered := 0
	for _, c := range charts {
		objs := objectsOf(t, renderChart(t, filepath.Join(dir, c.Path), c.Args))
		reversed := append([]manifest.Object{}, objs...)
		for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
			reversed[i], reversed[j] = reversed[j], reversed[i]
		}
		rep, err := diff.CompareSets(objs, reversed, diff.SetOptions{Namespace: "corpus"})
		if err != nil {
			t.Fatalf("%s: %v", c.Path, err)
		}
		if rows := setRows(rep); len(rows) > 0 || rep.Unmeasured > 0 {
			t.Errorf("%s: %d rows, %d unmeasured comparing a render with itself:\n%s", c.Path, len(rows), rep.Unmeasured, strings.Join(rows, "\n"))
		}
		rendered++
	}
	t.Logf("%d corpus renders compared with themselves", rendered)
}

// renderChart renders the chart at path as helm template does, with the --set values of args.
func renderChart(t *testing.T, path string, args []string) string {
	t.Helper()
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "--set" {
			if err := strvals.ParseInto(args[i+1], vals); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "r", Namespace: "corpus", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		if strings.HasSuffix(name, ".yaml") && strings.TrimSpace(out[name]) != "" {
			b.WriteString("---\n# Source: " + name + "\n" + out[name] + "\n")
		}
	}
	return b.String()
}

// TestCompareSetsCustomResourceDefaults: a custom resource is defaulted by the schema of its
// CRD in either set (each found by its own group's CRD name), so a field the head writes out at
// its default is no change, while a value the CRD does not default is.
func TestCompareSetsCustomResourceDefaults(t *testing.T) {
	crd := func(group, kind, plural string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + plural + `.` + group + `}
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, plural: ` + plural + `}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
              mode: {type: string}
`
	}
	base := crd("example.com", "Widget", "widgets") + "---\n" + crd("other.example.com", "Gadget", "gadgets") + `---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {mode: a}
---
apiVersion: other.example.com/v1
kind: Gadget
metadata: {name: g}
spec: {}
`
	head := crd("example.com", "Widget", "widgets") + "---\n" + crd("other.example.com", "Gadget", "gadgets") + `---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {mode: b, size: 3}
---
apiVersion: other.example.com/v1
kind: Gadget
metadata: {name: g}
spec: {size: 3}
`
	rep, err := diff.CompareSets(objectsOf(t, base), objectsOf(t, head), diff.SetOptions{Release: "w", Namespace: "apps"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Widget.example.com apps/w|DIFFERS|spec.mode|b|a"}
	if got := setRows(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompareSetsBaseNamespace: objects that state no namespace are in their own side's
// release namespace: a release whose namespace changes deletes the base's objects where they
// are and creates the head's in the new one.
func TestCompareSetsBaseNamespace(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: \"1\"}\n"
	rep, err := diff.CompareSets(objectsOf(t, cm), objectsOf(t, cm), diff.SetOptions{Release: "web", Namespace: "web", BaseNamespace: "apps"})
	if err != nil {
		t.Fatal(err)
	}
	var created, pruned []string
	for _, o := range rep.Objects {
		if o.Missing {
			created = append(created, o.Object)
		}
	}
	for _, p := range rep.Prune {
		pruned = append(pruned, p.Object)
	}
	if strings.Join(created, ",") != "ConfigMap web/settings" || strings.Join(pruned, ",") != "ConfigMap apps/settings" {
		t.Errorf("created %v, pruned %v; want ConfigMap web/settings created, apps/settings pruned", created, pruned)
	}
}

// TestCompareSetsRefusals: a change the API server refuses on update makes its object
// WILL-FAIL, the fields named; a change it allows does not; NoRefusals asks nothing.
func TestCompareSetsRefusals(t *testing.T) {
	deployment := func(selector string, replicas int) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: a}\nspec:\n  replicas: %d\n  selector: {matchLabels: {app: %s}}\n"+
			"  template:\n    metadata: {labels: {app: %s}}\n    spec: {containers: [{name: web, image: nginx}]}\n", replicas, selector, selector)
	}
	statefulSet := func(size string) string {
		return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: a}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n" +
			"  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: mysql}]}\n" +
			"  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: " + size + "}}}\n"
	}
	for _, tc := range []struct {
		name, base, head string
		no               bool
		field            string // "" when nothing is refused
	}{
		{"a Deployment's selector", deployment("web", 1), deployment("site", 1), false, "spec.selector"},
		{"a Deployment's replicas", deployment("web", 1), deployment("web", 3), false, ""},
		{"a StatefulSet's claims", statefulSet("1Gi"), statefulSet("2Gi"), false, "spec.volumeClaimTemplates"},
		{"not asked", deployment("web", 1), deployment("site", 1), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := diff.CompareSets(objectsOf(t, tc.base), objectsOf(t, tc.head), diff.SetOptions{Namespace: "a", NoRefusals: tc.no})
			if err != nil {
				t.Fatal(err)
			}
			var refused string
			for _, o := range rep.Objects {
				if o.Refusal != nil {
					refused = o.Refusal.Field
					for _, r := range o.Rows {
						if r.Resolved || r.Why != diff.WhyWillFail {
							t.Errorf("row %s of a refused object: resolved %v, %q", r.Path, r.Resolved, r.Why)
						}
					}
				}
			}
			if refused != tc.field || rep.WillFail != min(1, len(tc.field)) {
				t.Errorf("refused %q (willFail %d), want %q", refused, rep.WillFail, tc.field)
			}
		})
	}
}
