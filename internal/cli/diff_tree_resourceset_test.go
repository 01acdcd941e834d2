package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestDiffTreeResourceSet: the HelmReleases a Flux Operator ResourceSet makes, one per input
// set, are previewed as the operator builds them: a pull request that edits one input set's
// replicas changes that HelmRelease's render alone, and one that adds an input set installs
// a HelmRelease. A ResourceSet whose inputs only the cluster gives (inputsFrom) is noted while
// unchanged, and named as not measured when the pull request changes it (exit 3).
func TestDiffTreeResourceSet(t *testing.T) {
	chart := map[string]string{
		"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.yaml": "replicas: 1\n",
		"charts/web/templates/web.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}}
data: {replicas: {{ .Values.replicas | quote }}}
`,
	}
	rset := func(inputs, extra string) map[string]string {
		return map[string]string{"clusters/prod/apps.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: web, namespace: apps}
spec:
` + extra + `  inputs: ` + inputs + `
  resources:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      metadata:
        name: web-<< inputs.tenant >>
        namespace: apps
      spec:
        interval: 10m
        chart:
          spec:
            chart: ./charts/web
            sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
        values:
          replicas: << inputs.replicas | int >>
`}
	}
	base := `[{tenant: a, replicas: 1}, {tenant: b, replicas: 2}]`
	dir := gitTree(t, bootstrapped(chart, rset(base, "")))

	writeTree(t, dir, rset(`[{tenant: a, replicas: 1}, {tenant: b, replicas: 5}, {tenant: c, replicas: 1}]`, ""))
	code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	var doc treeDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, hr := range doc.HelmReleases {
		rows := []string{}
		if hr.Report != nil {
			for _, o := range hr.Report.Objects {
				for _, r := range o.Rows {
					rows = append(rows, o.Object+" "+r.Path)
				}
			}
		}
		got = append(got, hr.HelmRelease+" "+hr.Next+": "+strings.Join(rows, ", "))
	}
	slices.Sort(got)
	want := []string{
		"apps/web-b upgrade: ConfigMap apps/web-b data.replicas",
		"apps/web-c install: ConfigMap apps/web-c (whole object)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("previewed\n  %s\nwant\n  %s\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), errOut)
	}

	// An input set removed: the operator deletes its HelmRelease, whether or not the
	// Kustomization that applies the ResourceSet prunes, unless marked prune: disabled.
	for _, tc := range []struct {
		name, prune, annotations, next string
	}{
		{"pruned by the operator", "true", "", "uninstall"},
		{"the Kustomization does not prune", "false", "", "uninstall"},
		{"marked prune: disabled", "true", "        annotations: {fluxcd.controlplane.io/prune: disabled}\n", "nothing"},
	} {
		files := bootstrapped(chart, rset(base, ""))
		files["clusters/prod/flux-system/gotk-sync.yaml"] = strings.Replace(files["clusters/prod/flux-system/gotk-sync.yaml"], "prune: true", "prune: "+tc.prune, 1)
		marked := func(f map[string]string) map[string]string {
			f["clusters/prod/apps.yaml"] = strings.Replace(f["clusters/prod/apps.yaml"], "        namespace: apps\n      spec:", "        namespace: apps\n"+tc.annotations+"      spec:", 1)
			return f
		}
		dir := gitTree(t, marked(files))
		writeTree(t, dir, marked(rset(`[{tenant: a, replicas: 1}]`, "")))
		code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
		var doc treeDocument
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v\n%s%s", tc.name, err, out, errOut)
		}
		if len(doc.HelmReleases) != 1 || doc.HelmReleases[0].HelmRelease != "apps/web-b" || doc.HelmReleases[0].Next != tc.next {
			t.Errorf("%s: exit %d, %+v; want apps/web-b next %s\n%s", tc.name, code, doc.HelmReleases, tc.next, errOut)
		}
	}

	// A Static provider the tree holds: its default values are the input set, offline, as long
	// as the templates do not use its id (the cluster derives it from the object's UID).
	static := func(name string) map[string]string {
		f := rset(`[]`, "  inputsFrom: [{kind: ResourceSetInputProvider, name: defaults}]\n")
		f["clusters/prod/apps.yaml"] = strings.ReplaceAll(f["clusters/prod/apps.yaml"], "web-<< inputs.tenant >>", name) + `---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: defaults, namespace: apps}
spec:
  type: Static
  defaultValues: {tenant: z, replicas: REPLICAS}
`
		return f
	}
	for _, tc := range []struct {
		name, hr string
		code     int
		want     string
	}{
		{"its id unused", "web-<< inputs.tenant >>", ExitDrift, "apps/web-z upgrade"},
		{"its id used", "web-<< inputs.id >>", ExitUnmeasured, "use the id of a Static ResourceSetInputProvider"},
	} {
		files := static(tc.hr)
		files["clusters/prod/apps.yaml"] = strings.Replace(files["clusters/prod/apps.yaml"], "REPLICAS", "1", 1)
		dir := gitTree(t, bootstrapped(chart, files))
		head := static(tc.hr)
		head["clusters/prod/apps.yaml"] = strings.Replace(head["clusters/prod/apps.yaml"], "REPLICAS", "4", 1)
		writeTree(t, dir, head)
		code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
		var doc treeDocument
		_ = json.Unmarshal([]byte(out), &doc)
		got := errOut
		for _, hr := range doc.HelmReleases {
			got += hr.HelmRelease + " " + hr.Next
		}
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("static provider, %s: exit %d, want %d and %q\n%s", tc.name, code, tc.code, tc.want, got)
		}
	}

	// Inputs from the cluster: noted while the pull request leaves the ResourceSet alone.
	fromCluster := "  inputsFrom: [{kind: ResourceSetInputProvider, name: tenants}]\n"
	dir = gitTree(t, bootstrapped(chart, rset(base, fromCluster)))
	code, _, errOut = runTree(t, dir, "--base", "HEAD")
	if code != ExitOK || !strings.Contains(errOut, "ResourceSet apps/web (Kustomization flux-system/flux-system") || !strings.Contains(errOut, "not built offline") {
		t.Errorf("unchanged, inputs from the cluster: exit %d, want 0 and a note\n%s", code, errOut)
	}
	writeTree(t, dir, rset(`[{tenant: a, replicas: 3}]`, fromCluster))
	code, _, errOut = runTree(t, dir, "--base", "HEAD")
	if code != ExitUnmeasured || !strings.Contains(errOut, "could not measure ResourceSet apps/web") || !strings.Contains(errOut, "changed, and its objects cannot be built offline") {
		t.Errorf("changed, inputs from the cluster: exit %d, want 3 naming it\n%s", code, errOut)
	}
}
