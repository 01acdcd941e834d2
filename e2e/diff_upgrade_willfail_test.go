package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// willFailReport is the part of diff's JSON the WILL-FAIL test reads.
type willFailReport struct {
	WillFail int `json:"willFail"`
	Objects  []struct {
		Object  string `json:"object"`
		Refusal *struct {
			Reason, Field, Message string
		} `json:"refusal"`
	} `json:"objects"`
}

// refused lists "object|field" per refused object.
func (r willFailReport) refused() []string {
	var out []string
	for _, o := range r.Objects {
		if o.Refusal != nil {
			out = append(out, o.Object+"|"+o.Refusal.Field)
		}
	}
	return out
}

// TestDiffUpgradeWillFail: for each way the API server refuses an upgrade (a Deployment whose
// selector changes, a Service whose clusterIP is set to another value, a StatefulSet whose
// volumeClaimTemplates change, a PVC that asks for less, a ConfigMap a ValidatingAdmissionPolicy
// denies, a ConfigMap past a full ResourceQuota), diff upgrade says WILL-FAIL naming the object
// (and the field, where the server names one), says "this upgrade will fail" before the rows,
// and exits 2 even with --exit-code-on drift; offline, the API server's update validation run
// in process finds the immutable-field kinds too (not the admission policy nor the quota, which
// only the server sees); then the real helm upgrade (Helm 3 and Helm 4) fails on the same
// object. A change of a mutable field is no WILL-FAIL in any mode, and the real upgrade
// succeeds.
func TestDiffUpgradeWillFail(t *testing.T) {
	chart := filepath.Join(repoRoot, "testdata/charts/refusals")
	cases := []struct {
		name, set, object, field, helmSays string
		setup                              func(t *testing.T, ns string)
		offline                            bool // the offline update validation finds it too
		// before, when set, runs before the install and returns --set values for the install,
		// every diff and the upgrade.
		before func(t *testing.T, ns string) string
	}{
		{name: "selector", set: "selector=v2", object: "Deployment.apps %s/app-web", field: "spec.selector", helmSays: "field is immutable", offline: true},
		{name: "clusterIP", set: "clusterIP=10.96.0.99", object: "Service %s/app-web", field: "spec.clusterIPs[0]", helmSays: "may not change once set", offline: true},
		{name: "volumeClaimTemplates", set: "claimSize=2Gi", object: "StatefulSet.apps %s/app-db", field: "spec", helmSays: "updates to statefulset spec for fields other than", offline: true},
		{name: "smaller PVC", set: "pvcSize=1Gi", object: "PersistentVolumeClaim %s/app-cache", field: "spec", helmSays: "app-cache", offline: true},
		{name: "admission policy", set: "policyLabel=refused", object: "ConfigMap %s/app-settings", helmSays: "denied request", setup: denyLabel},
		{name: "CRD schema", set: "widget.size=20", object: "Widget.%[1]s.refusals.example.com %[1]s/app-widget", field: "spec.size", helmSays: "should be less than or equal to 10",
			before: widgetCRD, setup: tightenWidgetCRD, offline: true},
		{name: "full quota", set: "extraConfigMaps=1", object: "ConfigMap %s/app-extra-0", helmSays: "exceeded quota", setup: fullQuota},
	}
	for _, helmName := range []string{"helm3", "helm4"} {
		for _, tc := range cases {
			t.Run(helmName+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				h := clusterHelm(t, helmName)
				ns := cluster.Namespace(t)
				set := tc.set
				if tc.before != nil {
					base := tc.before(t, ns)
					h.run(t, false, nil, "install", "app", chart, "-n", ns, "--set", base)
					set = base + "," + tc.set
				} else {
					h.run(t, false, nil, "install", "app", chart, "-n", ns)
				}
				if tc.setup != nil {
					tc.setup(t, ns)
				}
				object := fmt.Sprintf(tc.object, ns)
				out, errOut, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--set", set, "-o", "json", "--kubeconfig", cluster.Kubeconfig)
				var rep willFailReport
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("diff -o json: exit %d, %v\n%s%s", code, err, out, errOut)
				}
				if want := object + "|" + tc.field; code != 2 || rep.WillFail != 1 || strings.Join(rep.refused(), ",") != want {
					t.Errorf("--set %s: exit %d, will fail %d, refused %v; want exit 2 and %s\n%s", tc.set, code, rep.WillFail, rep.refused(), want, out)
				}
				out, errOut, code = diffBinary(t, "upgrade", "app", chart, "-n", ns, "--set", set, "--normalize", "offline", "-o", "json", "--kubeconfig", cluster.Kubeconfig)
				rep = willFailReport{}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("diff --normalize offline -o json: exit %d, %v\n%s%s", code, err, out, errOut)
				}
				if got := strings.Join(rep.refused(), ","); tc.offline != (rep.WillFail == 1 && strings.HasPrefix(got, object+"|") && !strings.HasSuffix(got, "|")) {
					t.Errorf("--normalize offline --set %s: will fail %d, refused %v; want the offline validation to find it: %v\n%s", tc.set, rep.WillFail, got, tc.offline, out)
				}
				table, _, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--set", set, "--exit-code-on", "drift", "--kubeconfig", cluster.Kubeconfig)
				if code != 2 || !strings.HasPrefix(table, "this upgrade will fail") || !strings.Contains(table, "WILL-FAIL  "+object) {
					t.Errorf("table, --exit-code-on drift: exit %d, want 2, led by \"this upgrade will fail\" and a WILL-FAIL line for %s\n%s", code, object, table)
				}
				_, helmErr := h.run(t, true, nil, "upgrade", "app", chart, "-n", ns, "--set", set)
				name := object[strings.LastIndex(object, "/")+1:]
				if !strings.Contains(helmErr, name) || !strings.Contains(helmErr, tc.helmSays) {
					t.Errorf("the real helm upgrade --set %s: want it to fail on %s (%q)\n%s", tc.set, name, tc.helmSays, helmErr)
				}
			})
		}
		t.Run(helmName+"/mutable", func(t *testing.T) {
			t.Parallel()
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			h.run(t, false, nil, "install", "app", chart, "-n", ns)
			for _, mode := range []string{"auto", "offline", "server"} {
				table, _, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--set", "greeting=bonjour", "--normalize", mode, "--kubeconfig", cluster.Kubeconfig)
				if code != 2 || strings.Contains(table, "WILL-FAIL") || strings.Contains(table, "will fail") || !hasRow(table, "data.greeting", "bonjour") {
					t.Errorf("a mutable change, --normalize %s: exit %d, want 2 with the greeting row and no WILL-FAIL\n%s", mode, code, table)
				}
			}
			h.run(t, false, nil, "upgrade", "app", chart, "-n", ns, "--set", "greeting=bonjour")
		})
	}
}

// widgetCRD creates a namespaced CRD of Widgets (spec.size at most 100) in an API group of
// ns's own, removed after the test, and returns the --set values that render one.
func widgetCRD(t *testing.T, ns string) string {
	t.Helper()
	group := ns + ".refusals.example.com"
	applyWidgetCRD(t, group, 100)
	t.Cleanup(func() {
		cluster.Dynamic.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, time.Minute, "Widgets of "+group+" served", func() (bool, string) {
		_, err := cluster.Kube.Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err == nil, errString(err)
	})
	return "widget.group=" + group + ",widget.size=5"
}

// tightenWidgetCRD gives ns's Widget CRD a new schema: spec.size at most 10.
func tightenWidgetCRD(t *testing.T, ns string) {
	t.Helper()
	group := ns + ".refusals.example.com"
	applyWidgetCRD(t, group, 10)
	// The API server swaps a CRD's validation in a moment after the update: wait for it.
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "probe"}, "spec": map[string]any{"size": int64(20)}}}
	testenv.Eventually(t, time.Minute, "the new schema of "+group+" enforced", func() (bool, string) {
		_, err := cluster.Dynamic.Resource(widgets).Namespace(ns).Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), errString(err)
	})
}

func applyWidgetCRD(t *testing.T, group string, maximum int) {
	t.Helper()
	applyYAML(t, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
              size: {type: integer, maximum: %[2]d}`, group, maximum))
}

// denyLabel makes a ValidatingAdmissionPolicy on the test environment deny ConfigMaps labelled
// policy=refused in ns, and waits until the API server enforces it.
func denyLabel(t *testing.T, ns string) {
	t.Helper()
	name := "refuse-" + ns
	applyYAML(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
  - expression: "!has(object.metadata.labels) || !('policy' in object.metadata.labels) || object.metadata.labels['policy'] != 'refused'"
    message: "ConfigMaps labelled policy=refused are not admitted"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: %[2]s}`, name, ns))
	t.Cleanup(func() {
		ctx := context.Background()
		cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}).Delete(ctx, name, metav1.DeleteOptions{})
		cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}).Delete(ctx, name, metav1.DeleteOptions{})
	})
	probe := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":%q,"labels":{"policy":"refused"}}}`, ns)
	testenv.Eventually(t, 30*time.Second, "the policy enforced", func() (bool, string) {
		_, err := cluster.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).
			Patch(context.Background(), "probe", types.ApplyPatchType, []byte(probe), metav1.PatchOptions{FieldManager: "probe", DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "denied request"), fmt.Sprint(err)
	})
}

// fullQuota puts a ResourceQuota on ns whose count/configmaps is used up (the test
// environment runs no quota controller: the test writes its status, as the controller would).
func fullQuota(t *testing.T, ns string) {
	t.Helper()
	quotas := cluster.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}).Namespace(ns)
	applyYAML(t, fmt.Sprintf("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: objects, namespace: %s}\nspec:\n  hard: {count/configmaps: \"1\"}", ns))
	status := []byte(`{"status":{"hard":{"count/configmaps":"1"},"used":{"count/configmaps":"1"}}}`)
	if _, err := quotas.Patch(context.Background(), "objects", types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}
