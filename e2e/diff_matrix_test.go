package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// zooChart is the zoo chart's path for commands run outside the repository root.
func zooChart() string { return filepath.Join(repoRoot, "testdata/charts/zoo") }

// zooReport is the part of diff's JSON the matrix asserts.
type zooReport struct {
	Divergences      int    `json:"divergences"`
	Compared         int    `json:"compared"`
	Apply            string `json:"apply"`
	PendingDeletions int    `json:"pendingDeletions"`
	WillFail         int    `json:"willFail"`
	Objects          []struct {
		Object    string `json:"object"`
		Normalize string `json:"normalize"`
		Rows      []struct {
			Class           string   `json:"class"`
			Path            string   `json:"path"`
			Inert           bool     `json:"inert"`
			Unstable        bool     `json:"unstable"`
			PendingDeletion bool     `json:"pendingDeletion"`
			Resolved        bool     `json:"resolvedByUpgrade"`
			Managers        []string `json:"managers"`
			Agree           *bool    `json:"agree"`
		} `json:"divergences"`
	} `json:"objects"`
}

// rows flattens a report to one line per row: "object|class|path|flags|resolved|managers".
func (r zooReport) rows() []string {
	var out []string
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			flags := ""
			if d.Inert {
				flags += "inert "
			}
			if d.PendingDeletion {
				flags += "pending "
			}
			if d.Agree != nil {
				flags += fmt.Sprintf("agree=%v ", *d.Agree)
			}
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%v|%s", o.Object, d.Class, d.Path, strings.TrimSpace(flags), d.Resolved, strings.Join(d.Managers, ",")))
		}
	}
	sort.Strings(out)
	return out
}

func zooDiff(t *testing.T, args ...string) (zooReport, string, int) {
	t.Helper()
	out, errOut, code := diffBinary(t, append(args, "-o", "json", "--kubeconfig", cluster.Kubeconfig)...)
	var rep zooReport
	if code == 0 || code == 2 {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("diff %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	return rep, out + errOut, code
}

// TestDiffZeroFalsePositives installs the zoo chart (probes and a startupProbe, a fieldRef
// without apiVersion, resources as 0.5/500m/1Gi, ClusterIP, headless, NodePort with a fixed node
// port, LoadBalancer and ExternalName Services, a StatefulSet, a DaemonSet, a Job, a CronJob,
// Secrets with stringData and of type tls, ConfigMaps, an Ingress, a CR with schema defaults and
// a templated CRD, RBAC, a PVC, an HPA, a PDB, NetworkPolicies, a PriorityClass, a ResourceQuota,
// a LimitRange, admission webhook configurations) with the real Helm 3 (client-side apply) and
// Helm 4 (server-side apply): diff release and diff upgrade with the same values show 0
// divergences in both normalisation modes.
func TestDiffZeroFalsePositives(t *testing.T) {
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			// A node port stated by the chart: the server dry-run must not ask for it again.
			nodePort := map[string]string{"helm3": "30901", "helm4": "30902"}[helmName]
			h.run(t, false, nil, "install", "zoo", "testdata/charts/zoo", "-n", ns, "--set", "fixedNodePort="+nodePort)
			wantApply := map[string]string{"helm3": "client-side", "helm4": "server-side"}[helmName]
			for _, mode := range []string{"offline", "server"} {
				for _, args := range [][]string{
					{"release", "zoo", "-n", ns, "--normalize", mode},
					{"upgrade", "zoo", zooChart(), "-n", ns, "--normalize", mode, "--reuse-values"},
				} {
					rep, out, code := zooDiff(t, args...)
					if code != 0 || rep.Divergences != 0 || rep.Compared < 200 || rep.Apply != wantApply {
						t.Errorf("diff %s: exit %d, %d divergences across %d fields, apply %q (want 0 across 200+, %s)\n%s",
							strings.Join(args, " "), code, rep.Divergences, rep.Compared, rep.Apply, wantApply, out)
					}
					for _, o := range rep.Objects {
						want := mode
						if mode == "server" && strings.HasPrefix(o.Object, "CustomResourceDefinition.") {
							want = "offline (a CustomResourceDefinition's name is fixed: no dry-run under another name)"
						}
						if o.Normalize != want {
							t.Errorf("diff %s: %s normalised %q, want %q", strings.Join(args, " "), o.Object, o.Normalize, want)
						}
					}
				}
			}
		})
	}
}

// mutateZoo makes the matrix's edits with the real API, each as another field manager would.
func mutateZoo(t *testing.T, ns, marker string) {
	t.Helper()
	ctx := context.Background()
	patch := func(gvr schema.GroupVersionResource, name string, pt types.PatchType, body string, opts metav1.PatchOptions) {
		t.Helper()
		if _, err := cluster.Dynamic.Resource(gvr).Namespace(ns).Patch(ctx, name, pt, []byte(body), opts); err != nil {
			t.Fatalf("patch %s %s: %v", gvr.Resource, name, err)
		}
	}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secret := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	widget := schema.GroupVersionResource{Group: "zoo.example.com", Version: "v1", Resource: "widgets"}
	byPatch := metav1.PatchOptions{FieldManager: "kubectl-patch"}
	// value change (DIFFERS), field removed (CHART-ONLY), a live-only initialDelaySeconds beside
	// a startupProbe (inert)
	patch(deploy, "zoo-web", types.MergePatchType, `{"spec":{"replicas":3}}`, byPatch)
	patch(deploy, "zoo-web", types.JSONPatchType, `[{"op":"remove","path":"/spec/template/spec/containers/0/resources/limits/memory"}]`, byPatch)
	patch(deploy, "zoo-web", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"web","livenessProbe":{"initialDelaySeconds":30}}]}}}}`, byPatch)
	// an env entry added by another manager with server-side apply (CLUSTER-ONLY, kept)
	apply := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"zoo-web"},"spec":{"selector":{"matchLabels":{"app":"zoo-web"}},
		"template":{"metadata":{"labels":{"app":"zoo-web"}},"spec":{"containers":[{"name":"web","env":[{"name":"INJECTED","value":"1"}]}]}}}}`
	patch(deploy, "zoo-web", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "sidecar-injector"})
	// the envFrom sources edited: the inline entries now hide different values (SHADOWS differ)
	patch(cm, "zoo-settings", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`, byPatch)
	patch(secret, "zoo-creds", types.MergePatchType, `{"stringData":{"TOKEN":"`+marker+`"}}`, byPatch)
	// a custom resource's field (Helm 3 keeps it: two-way merge; Helm 4 conflicts)
	patch(widget, "zoo-widget", types.MergePatchType, `{"spec":{"color":"red"}}`, byPatch)
	// a whole object deleted (CHART-ONLY object)
	if err := cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "zoo-extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDiffMutationMatrix: each edit made with the real API shows up with the exact class, path
// and flags, and what diff upgrade predicts is then checked by running the real helm upgrade:
// the rows left afterwards are exactly those predicted unresolved.
func TestDiffMutationMatrix(t *testing.T) {
	const web = "Deployment.apps %s/zoo-web"
	env := "spec.template.spec.containers[name=web]."
	// expected rows: object (with %s for the namespace) | class | path | flags | resolved | managers
	common := []string{
		"ConfigMap %s/zoo-extra|CHART-ONLY|(whole object)||true|",
		web + "|CLUSTER-ONLY|spec.template.metadata.annotations.zoo.example.com/old|pending|true|",
		web + "|CHART-ONLY|" + env + "resources.limits.memory||true|",
		web + "|SHADOWS|" + env + "env[name=LOG_LEVEL]|agree=false|false|",
		web + "|SHADOWS|" + env + "env[name=TOKEN]|agree=false|false|",
	}
	want := map[string][]string{
		"helm3": append([]string{ // client-side: a three-way merge resets what another manager changed
			"ConfigMap %s/zoo-settings|DIFFERS|data.LOG_LEVEL||true|kubectl-patch",
			"Secret %s/zoo-creds|DIFFERS|data.TOKEN||true|kubectl-patch",
			web + "|DIFFERS|spec.replicas||true|kubectl-patch",
			web + "|CLUSTER-ONLY|" + env + "env[name=INJECTED]||false|sidecar-injector", // one row for the whole entry
			web + "|CLUSTER-ONLY|" + env + "livenessProbe.initialDelaySeconds|inert|false|kubectl-patch",
			"Widget.zoo.example.com %s/zoo-widget|DIFFERS|spec.color||false|kubectl-patch", // a two-way merge for custom resources
		}, common...),
		"helm4": append([]string{
			"ConfigMap %s/zoo-settings|DIFFERS|data.LOG_LEVEL||false|kubectl-patch",
			"Secret %s/zoo-creds|DIFFERS|data.TOKEN||true|kubectl-patch", // stringData is written over data: no conflict
			web + "|DIFFERS|spec.replicas||false|kubectl-patch",
			web + "|CLUSTER-ONLY|" + env + "env[name=INJECTED]||false|sidecar-injector", // one row for the whole entry
			web + "|CLUSTER-ONLY|" + env + "livenessProbe.initialDelaySeconds|inert|false|kubectl-patch",
			"Widget.zoo.example.com %s/zoo-widget|DIFFERS|spec.color||false|kubectl-patch",
		}, common...),
	}
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			marker := "ZOO-SECRET-MARKER-" + helmName
			h.run(t, false, nil, "install", "zoo", "testdata/charts/zoo", "-n", ns)
			mutateZoo(t, ns, marker)
			upgrade := []string{"upgrade", "zoo", zooChart(), "-n", ns, "--set", "oldAnnotation=false"}
			for _, mode := range []string{"offline", "server"} {
				rep, out, code := zooDiff(t, append(upgrade, "--normalize", mode)...)
				var expected []string
				for _, w := range want[helmName] {
					expected = append(expected, strings.Replace(w, "%s", ns, 1))
				}
				sort.Strings(expected)
				if got := rep.rows(); code != 2 || strings.Join(got, "\n") != strings.Join(expected, "\n") || rep.PendingDeletions != 1 {
					t.Errorf("%s: exit %d, pending %d, rows:\n%s\nwant:\n%s\n%s", mode, code, rep.PendingDeletions,
						strings.Join(got, "\n"), strings.Join(expected, "\n"), out)
				}
			}
			// No output mode prints the Secret's value, nor its base64.
			for _, format := range []string{"table", "json", "yaml", "markdown", "counts"} {
				out, errOut, _ := diffBinary(t, append(upgrade, "-o", format, "--kubeconfig", cluster.Kubeconfig)...)
				for _, leak := range []string{marker, b64(marker)} {
					if strings.Contains(out+errOut, leak) {
						t.Errorf("-o %s printed the Secret's value:\n%s", format, out)
					}
				}
				if format == "counts" && strings.Contains(out, "zoo-web") {
					t.Errorf("-o counts names an object:\n%s", out)
				}
			}

			// Do it: the real helm upgrade.
			if helmName == "helm4" {
				_, errOut := h.run(t, true, nil, upgrade...)
				for _, conflict := range []string{".spec.replicas", ".data.LOG_LEVEL", ".spec.color"} {
					if !strings.Contains(errOut, conflict) {
						t.Errorf("helm4 upgrade: want a conflict on %s (predicted), got:\n%s", conflict, errOut)
					}
				}
				if strings.Contains(errOut, ".data.TOKEN") {
					t.Errorf("helm4 upgrade: a conflict on the Secret, predicted none:\n%s", errOut)
				}
				h.run(t, false, nil, append(upgrade, "--force-conflicts")...)
			} else {
				h.run(t, false, nil, upgrade...)
			}
			rep, out, _ := zooDiff(t, "release", "zoo", "-n", ns)
			var left []string
			for _, w := range want[helmName] {
				if strings.Contains(w, "|false|") && !strings.Contains(w, "|SHADOWS|") {
					left = append(left, strings.Replace(w, "%s", ns, 1))
				}
			}
			if helmName == "helm4" { // --force-conflicts resolved the conflicts too
				left = []string{
					fmt.Sprintf(web, ns) + "|CLUSTER-ONLY|" + env + "env[name=INJECTED]||false|sidecar-injector",
					fmt.Sprintf(web, ns) + "|CLUSTER-ONLY|" + env + "livenessProbe.initialDelaySeconds|inert|false|kubectl-patch",
				}
			}
			left = append(left,
				fmt.Sprintf(web, ns)+"|SHADOWS|"+env+"env[name=LOG_LEVEL]|agree=true|false|",
				fmt.Sprintf(web, ns)+"|SHADOWS|"+env+"env[name=TOKEN]|agree=true|false|")
			sort.Strings(left)
			if got := rep.rows(); strings.Join(got, "\n") != strings.Join(left, "\n") {
				t.Errorf("after helm upgrade, rows:\n%s\nwant (predicted unresolved):\n%s\n%s", strings.Join(got, "\n"), strings.Join(left, "\n"), out)
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestDiffUpgradeFlagsAndAll: diff upgrade renders with helm upgrade's flags (-f, --set-file,
// --post-renderer with args) and lists what the new render drops as to be pruned (unless kept
// by helm.sh/resource-policy: keep), which the real helm upgrade then does; diff release --all
// and -A give one summary row per release.
func TestDiffUpgradeFlagsAndAll(t *testing.T) {
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	h.run(t, false, nil, "install", "zoo", "testdata/charts/zoo", "-n", ns)
	h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns)
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	password := filepath.Join(dir, "password")
	renderer := filepath.Join(dir, "add-configmap.sh")
	os.WriteFile(values, []byte("replicas: 5\n"), 0o644)
	os.WriteFile(password, []byte("FLAGS-SECRET-MARKER"), 0o644)
	os.WriteFile(renderer, []byte("#!/bin/sh\ncat\nprintf -- '---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: %s\\ndata: {a: b}\\n' \"$1\"\n"), 0o755)

	out, errOut, code := diffBinary(t, "upgrade", "web", filepath.Join(repoRoot, "testdata/charts/webapp"), "-n", ns, "--kubeconfig", cluster.Kubeconfig,
		"-f", values, "--set-file", "password="+password, "--post-renderer", renderer, "--post-renderer-args", "from-post-renderer")
	for _, want := range [][]string{
		{"Deployment.apps " + ns + "/web", "DIFFERS", "spec.replicas", "5", "2", "yes"},
		{"Secret " + ns + "/web-creds", "DIFFERS", "data.password", "(redacted, "},
		{"ConfigMap " + ns + "/from-post-renderer", "CHART-ONLY", "(whole object)", "yes: created"},
	} {
		if !hasRow(out, want...) {
			t.Errorf("diff upgrade with -f, --set-file, --post-renderer: no row with %q (exit %d)\n%s%s", want, code, out, errOut)
		}
	}
	if code != 2 || strings.Contains(out+errOut, "FLAGS-SECRET-MARKER") {
		t.Errorf("exit %d (want 2), or the --set-file Secret value printed\n%s", code, out)
	}

	// A chart that keeps a generated password with lookup: rendered against the cluster, as
	// helm upgrade renders it, nothing changes (and the real upgrade keeps the password); with
	// --lookup=false, as helm template renders it, the password differs on every render.
	lookupChart := filepath.Join(repoRoot, "testdata/charts/lookupapp")
	h.run(t, false, nil, "install", "gen", lookupChart, "-n", ns)
	out, errOut, code = diffBinary(t, "upgrade", "gen", lookupChart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 0 || !strings.Contains(out, "0 divergences across") {
		t.Errorf("diff upgrade of a chart using lookup: exit %d\n%s%s", code, out, errOut)
	}
	// With --lookup=false the password is random on every render: unstable, not counted unless
	// --count-unstable.
	out, _, code = diffBinary(t, "upgrade", "gen", lookupChart, "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--lookup=false")
	if code != 0 || !hasRow(out, "Secret "+ns+"/gen-generated", "DIFFERS", "data.password (unstable)", "(redacted, ") {
		t.Errorf("diff upgrade --lookup=false: exit %d, want 0 with the password unstable\n%s", code, out)
	}
	out, _, code = diffBinary(t, "upgrade", "gen", lookupChart, "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--lookup=false", "--count-unstable")
	if code != 2 || !hasRow(out, "Secret "+ns+"/gen-generated", "DIFFERS", "data.password (unstable)", "(redacted, ") {
		t.Errorf("diff upgrade --lookup=false --count-unstable: exit %d, want 2\n%s", code, out)
	}
	before, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "gen-generated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.run(t, false, nil, "upgrade", "gen", lookupChart, "-n", ns)
	after, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, "gen-generated", metav1.GetOptions{})
	if err != nil || string(after.Data["password"]) != string(before.Data["password"]) {
		t.Errorf("helm upgrade changed the generated password, predicted unchanged")
	}

	// A chart from an OCI registry, by version, over plain HTTP.
	tgzDir := t.TempDir()
	h.run(t, false, nil, "package", "testdata/charts/webapp", "-d", tgzDir)
	repo := "oci://" + cluster.Registry + "/diff-" + ns
	h.run(t, false, nil, "push", filepath.Join(tgzDir, "webapp-1.0.0.tgz"), repo, "--plain-http")
	h.run(t, false, nil, "install", "oci-web", repo+"/webapp", "--version", "1.0.0", "--plain-http", "-n", ns)
	out, errOut, code = diffBinary(t, "upgrade", "oci-web", repo+"/webapp", "--version", "1.0.0", "--plain-http", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 0 || !strings.Contains(out, "0 divergences across") {
		t.Errorf("diff upgrade from an OCI registry: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = diffBinary(t, "upgrade", "oci-web", repo+"/webapp", "--version", "9.9.9", "--plain-http", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 1 || !strings.Contains(errOut, "chart "+repo+"/webapp") {
		t.Errorf("a chart version that does not exist: exit %d (want 1, naming the chart)\n%s", code, errOut)
	}

	// Pruning: the new render drops zoo-legacy and zoo-kept.
	out, _, code = diffBinary(t, "upgrade", "zoo", zooChart(), "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--set", "legacy=false")
	if code != 2 || !strings.Contains(out, "TO PRUNE  ConfigMap "+ns+"/zoo-legacy\n") ||
		!strings.Contains(out, "TO PRUNE  ConfigMap "+ns+"/zoo-kept (helm.sh/resource-policy: keep: Helm leaves it in the cluster)") {
		t.Errorf("prune list: exit %d\n%s", code, out)
	}
	h.run(t, false, nil, "upgrade", "zoo", "testdata/charts/zoo", "-n", ns, "--set", "legacy=false")
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "zoo-legacy", metav1.GetOptions{}); err == nil {
		t.Errorf("helm upgrade left zoo-legacy, predicted pruned")
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "zoo-kept", metav1.GetOptions{}); err != nil {
		t.Errorf("helm upgrade removed zoo-kept, predicted kept: %v", err)
	}

	// --all: one row per release of the namespace; -A: every namespace.
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = diffBinary(t, "release", "--all", "-n", ns, "--kubeconfig", cluster.Kubeconfig)
	if code != 2 || !hasRow(out, ns+"/web", "1/", "1", "0", "0", "0") || !hasRow(out, ns+"/zoo", "0/", "0", "0", "0", "2") || !hasRow(out, ns+"/oci-web", "0/") ||
		!strings.HasPrefix(out, "RELEASE") {
		t.Errorf("diff release --all: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = diffBinary(t, "release", "-A", "-o", "json", "--kubeconfig", cluster.Kubeconfig)
	var all struct {
		Releases []struct{ Release, Namespace string } `json:"releases"`
	}
	json.Unmarshal([]byte(out), &all)
	found := 0
	for _, r := range all.Releases {
		if r.Namespace == ns {
			found++
		}
	}
	if found != 4 {
		t.Errorf("diff release -A: %d rows of namespace %s, want 4\n%s", found, ns, out)
	}
}
