package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/managedfields"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// TestSuggestIgnore is --suggest-ignore's acceptance test against the real helm-controller. A
// release it installed with drift detection enabled (testdata/charts/fightapp) has a Deployment
// a real HorizontalPodAutoscaler targets, its replicas written through the scale subresource
// by kube-controller-manager (the field manager the HPA controller writes as), and a webhook
// configuration whose caBundle cert-manager's cainjector writes. Without rules, each reconcile
// of helm-controller resets both (the fight: managedFields then name helm-controller). With the
// rules --suggest-ignore printed applied to the HelmRelease, three reconciles change neither,
// and a label a person edited (kubectl-edit), which gets no rule, is still corrected. The
// argocd rules parse as ignoreDifferences and their jq expressions, compiled with gojq, select
// exactly those fields on the live objects.
func TestSuggestIgnore(t *testing.T) {
	ns := cluster.Namespace(t)
	ctx := context.Background()
	hook := ns + "-fightapp"
	t.Cleanup(func() {
		cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), hook, metav1.DeleteOptions{})
	})
	chartHelmReleaseWith(t, ns, "fightapp", "")

	// A person's kubectl scale (manager kubectl, the scale subresource) and kubectl patch get no
	// rule, and drift correction resets them. A reconcile helm-controller still has in flight
	// after the install (its drift check follows the install, after Ready=True is written) may
	// reset either before diff reads it: the edits are then made again, a few times at most.
	scaled := "# no rule for Deployment.apps " + ns + "/web spec.replicas: set by kubectl, a person's tool"
	patched := "# no rule for Service " + ns + "/web spec.ports[port=443,protocol=TCP].targetPort: set by kubectl-patch, a person's tool"
	var out, errOut string
	var code int
	for attempt := 0; attempt < 5; attempt++ {
		if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`),
			metav1.PatchOptions{FieldManager: "kubectl"}, "scale"); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Kube.CoreV1().Services(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"ports":[{"port":443,"targetPort":9000}]}}`),
			metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
			t.Fatal(err)
		}
		out, errOut, code = helmDrift("", "diff", "helmrelease", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--suggest-ignore")
		if strings.Contains(out, scaled) && strings.Contains(out, patched) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if code != 2 || !strings.Contains(out, ": 0 rules for HelmRelease") || !strings.Contains(out, scaled) || !strings.Contains(out, patched) {
		t.Errorf("a person's scale and patch: exit %d, want no rule for either:\n%s%s", code, out, errOut)
	}
	if _, err := cluster.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptrTo(int32(2)), MaxReplicas: 6,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	injected := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB-test-ca\n-----END CERTIFICATE-----\n"))
	// The controllers' writes, as each makes them.
	controllers := func() {
		t.Helper()
		if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`),
			metav1.PatchOptions{FieldManager: "kube-controller-manager"}, "scale"); err != nil {
			t.Fatal(err)
		}
		patch := fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":%q}]`, injected)
		if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, hook, types.JSONPatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "cert-manager-cainjector"}); err != nil {
			t.Fatal(err)
		}
	}
	// A person's edit: a label the chart states, changed with kubectl edit.
	person := func() {
		t.Helper()
		if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"edited"}}}`),
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	type state struct {
		replicas         int64
		caBundle, tier   string
		replicasManagers []string
	}
	read := func() state {
		t.Helper()
		d, err := cluster.Dynamic.Resource(deployments).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, hook, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return state{replicas: r, caBundle: base64.StdEncoding.EncodeToString(w.Webhooks[0].ClientConfig.CABundle), tier: d.GetLabels()["tier"],
			replicasManagers: managedfields.Names(managedfields.OwnersIn(d.Object, managedfields.Fields(d.Object), "/spec/replicas", "scale"))}
	}
	reconcile := func(what string) {
		t.Helper()
		token := requestReconcile(t, helmReleases, ns, "web")
		testenv.Eventually(t, time.Minute, what, func() (bool, string) {
			hr, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			handled, _, _ := unstructured.NestedString(hr.Object, "status", "lastHandledReconcileAt")
			return handled == token && condition(hr, "Ready") == "True", "handled " + handled + ", Ready=" + condition(hr, "Ready")
		})
	}

	// The fight: without rules, a reconcile resets what the controllers wrote.
	controllers()
	person()
	if s := read(); s.replicas != 4 || s.caBundle != injected || s.tier != "edited" {
		t.Fatalf("the writes did not land: %+v", s)
	}
	reconcile("helm-controller corrects the drift")
	if svc, err := cluster.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil || svc.Spec.Ports[0].TargetPort.IntValue() != 8443 {
		t.Errorf("drift correction did not reset the person's targetPort: %v %v", err, svc.Spec.Ports)
	}
	// helm-controller's own account of the fight: a DriftCorrected event naming both objects.
	corrected := func() (webhook int32, all int32, text string) {
		t.Helper()
		evs, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=HelmRelease,involvedObject.name=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "DriftCorrected" {
				n := max(e.Count, 1)
				all += n
				if strings.Contains(e.Message, "ValidatingWebhookConfiguration/") {
					webhook += n
				}
				text += e.Message + "\n"
			}
		}
		return webhook, all, text
	}
	testenv.Eventually(t, time.Minute, "helm-controller's DriftCorrected event", func() (bool, string) {
		w, _, text := corrected()
		return w == 1 && strings.Contains(text, "Deployment/"+ns+"/web"), text
	})
	if s := read(); s.replicas != 2 || s.caBundle != "Cg==" || s.tier != "web" {
		t.Fatalf("without rules, helm-controller's drift correction should reset replicas, caBundle and the label: %+v", s)
	} else {
		t.Logf("the fight: after one reconcile, replicas %d (owned by %v), caBundle %q, tier %q", s.replicas, s.replicasManagers, s.caBundle, s.tier)
	}

	// The suggestions, on the state the controllers and the person leave.
	controllers()
	person()
	out, errOut, code = helmDrift("", "diff", "helmrelease", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--suggest-ignore")
	if code != 2 {
		t.Fatalf("diff helmrelease --suggest-ignore: exit %d\n%s%s", code, out, errOut)
	}
	for _, w := range []string{
		"# Deployment.apps " + ns + "/web spec.replicas: set by kube-controller-manager: HorizontalPodAutoscaler " + ns + "/web scales Deployment web",
		"set by cert-manager-cainjector: its caBundle is injected (annotation cert-manager.io/inject-ca-from)",
		"this rule breaks if the list is reordered; index-free but wider: /webhooks",
		"# no rule for Deployment.apps " + ns + "/web metadata.labels.tier: set by kubectl-edit, a person's tool",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--suggest-ignore output lacks %q:\n%s", w, out)
		}
	}
	yamlPart := out[strings.Index(out, "# helm-drift --suggest-ignore"):]
	var spec struct {
		DriftDetection struct {
			Ignore []flux.IgnoreRule `json:"ignore"`
		} `json:"driftDetection"`
	}
	if err := sigsyaml.UnmarshalStrict([]byte(yamlPart), &spec); err != nil {
		t.Fatalf("the suggested rules do not parse: %v\n%s", err, yamlPart)
	}
	var paths []string
	for _, r := range spec.DriftDetection.Ignore {
		paths = append(paths, r.Target.Kind+" "+strings.Join(r.Paths, ","))
	}
	if want := []string{"Deployment /spec/replicas", "ValidatingWebhookConfiguration /webhooks/0/clientConfig/caBundle"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("suggested %v, want %v", paths, want)
	}

	// Argo CD's form, checked on the live objects.
	out, errOut, code = helmDrift("", "diff", "helmrelease", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--suggest-ignore=argocd")
	if code != 2 {
		t.Fatalf("--suggest-ignore=argocd: exit %d\n%s%s", code, out, errOut)
	}
	var app advise.ArgoCDIgnoreDifferences
	if err := sigsyaml.UnmarshalStrict([]byte(out[strings.Index(out, "# helm-drift --suggest-ignore"):]), &app); err != nil {
		t.Fatalf("argocd rules do not parse: %v\n%s", err, out)
	}
	d, _ := cluster.Dynamic.Resource(deployments).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	w, _ := cluster.Dynamic.Resource(webhookConfigs).Get(ctx, hook, metav1.GetOptions{})
	lives := map[string]map[string]any{"Deployment": d.Object, "ValidatingWebhookConfiguration": w.Object}
	want := map[string]any{"Deployment": int64(4), "ValidatingWebhookConfiguration": injected}
	if len(app.IgnoreDifferences) != 2 {
		t.Fatalf("%d argocd rules, want 2:\n%s", len(app.IgnoreDifferences), out)
	}
	for _, r := range app.IgnoreDifferences {
		q, err := gojq.Parse(r.JQPathExpressions[0])
		if err != nil {
			t.Fatalf("%s: %v", r.JQPathExpressions[0], err)
		}
		c, err := gojq.Compile(q)
		if err != nil {
			t.Fatalf("%s: %v", r.JQPathExpressions[0], err)
		}
		var got []any
		for it := c.Run(jsonRoundTrip(t, lives[r.Kind])); ; {
			v, ok := it.Next()
			if !ok {
				break
			}
			got = append(got, v)
		}
		if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want[r.Kind]) {
			t.Errorf("%s on the live %s selects %v, want exactly %v", r.JQPathExpressions[0], r.Kind, got, want[r.Kind])
		}
	}

	// render --ignore-from-cluster adds the same rules to the driftDetection it injects, each
	// named in a warning; without cluster access it warns and adds none, and renders all the same.
	hr := fmt.Sprintf("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: %s}\nspec:\n  interval: 1h\n  chartRef: {kind: OCIRepository, name: fightapp}\n", ns)
	rendered, warnings := renderBinary(t, false, []byte(hr), "--drift-detection", ns+"/web=enabled", "--ignore-from-cluster", "--kubeconfig", cluster.Kubeconfig)
	var doc struct {
		Spec struct {
			DriftDetection struct {
				Mode   string            `json:"mode"`
				Ignore []flux.IgnoreRule `json:"ignore"`
			} `json:"driftDetection"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal([]byte(rendered), &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Spec.DriftDetection.Ignore, spec.DriftDetection.Ignore) || doc.Spec.DriftDetection.Mode != "enabled" {
		t.Errorf("render --ignore-from-cluster set %+v, want mode enabled and the suggested rules %+v\n%s", doc.Spec.DriftDetection, spec.DriftDetection.Ignore, rendered)
	}
	for _, w := range []string{"--ignore-from-cluster: added ignore rule /spec/replicas for Deployment.apps " + ns + "/web", "set by cert-manager-cainjector",
		"--ignore-from-cluster: no rule for Deployment.apps " + ns + "/web metadata.labels.tier: set by kubectl-edit"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("render's warnings lack %q:\n%s", w, warnings)
		}
	}
	rendered, warnings = renderBinary(t, false, []byte(hr), "--drift-detection", ns+"/web=enabled", "--ignore-from-cluster", "--kubeconfig", tokenKubeconfig(t, "https://127.0.0.1:1", "none"))
	if strings.Contains(rendered, "ignore:") || !strings.Contains(rendered, "mode: enabled") || !strings.Contains(warnings, "no rule added from the cluster") {
		t.Errorf("render --ignore-from-cluster without the cluster: want mode enabled, no rule, a warning\n%s%s", rendered, warnings)
	}

	// The rules applied: reconciles leave the controllers' fields, and still correct the person's.
	rules, _ := json.Marshal(spec.DriftDetection.Ignore)
	if _, err := cluster.Dynamic.Resource(helmReleases).Namespace(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"driftDetection":{"mode":"enabled","ignore":`+string(rules)+`}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		reconcile(fmt.Sprintf("reconcile %d with the rules", i+1))
		s := read()
		if s.replicas != 4 || s.caBundle != injected {
			t.Fatalf("reconcile %d with the rules changed a controller's field: %+v", i+1, s)
		}
		if s.tier != "web" {
			t.Fatalf("reconcile %d with the rules left the person's edit: tier %q, want it corrected to web", i+1, s.tier)
		}
		person() // the person edits again; the next reconcile corrects it again
	}
	testenv.Eventually(t, time.Minute, "a DriftCorrected event for each person's edit, none touching the webhook", func() (bool, string) {
		w, all, text := corrected()
		return w == 1 && all >= 4, fmt.Sprintf("%d events, %d naming the webhook configuration:\n%s", all, w, text)
	})
	if s := read(); !reflect.DeepEqual(s.replicasManagers, []string{"kube-controller-manager"}) {
		t.Errorf("after three reconciles with the rules, spec.replicas is owned by %v, want kube-controller-manager only", s.replicasManagers)
	}

	// With the rules in place, nothing is left to suggest; the person's edit is still reported.
	out, errOut, code = helmDrift("", "diff", "helmrelease", "web", "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--suggest-ignore")
	if code != 2 || !strings.Contains(out, ": 0 rules for HelmRelease") || !strings.Contains(out, "metadata.labels.tier") || strings.Contains(out, "spec.replicas") {
		t.Errorf("with the rules applied: exit %d, want 0 rules and only the person's edit:\n%s%s", code, out, errOut)
	}
}

// jsonRoundTrip is v as encoding/json decodes it (what gojq takes: float64 numbers).
func jsonRoundTrip(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var webhookConfigs = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
