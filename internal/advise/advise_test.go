package advise

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
)

// The live objects, with the managedFields the API server writes: Helm's own entry, then the
// others' as each wrote its field.
const (
	deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, tier: edited}
  annotations: {meta.helm.sh/release-name: web}
  managedFields:
  - manager: helm
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}}, "f:labels": {"f:app": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:image": {}}}}}}}
  - manager: kube-controller-manager
    operation: Update
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
  - manager: kubectl-edit
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata": {"f:labels": {"f:tier": {}}}}
  - manager: mesh-operator
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:image": {}}}}}}}
spec:
  replicas: 4
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.28`
	webhook = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: shop-hooks
  annotations: {cert-manager.io/inject-ca-from: shop/serving-cert, meta.helm.sh/release-name: web}
  managedFields:
  - manager: helm
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}}}}
  - manager: cert-manager-cainjector
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1: {"f:webhooks": {"k:{\"name\":\"b.example.com\"}": {".": {}, "f:clientConfig": {"f:caBundle": {}}, "f:name": {}}}}
webhooks:
- name: a.example.com
  clientConfig: {caBundle: Cg==}
- name: b.example.com
  clientConfig: {caBundle: TFMwdExTMUNSVWRKVGc9PQ==}`
	clusterRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: shop-view
  annotations: {meta.helm.sh/release-name: web}
  managedFields:
  - manager: helm
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:aggregationRule": {}, "f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}}}}
  - manager: clusterrole-aggregation-controller
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1: {"f:rules": {}}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {shop/aggregate-to-view: "true"}}]
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]`
	// A replicas field an unnamed manager owns, on a Deployment no HPA scales.
	other = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: shop
  annotations: {meta.helm.sh/release-name: web}
  managedFields:
  - manager: helm
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}}}}
  - manager: rollout-tool
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec:
  replicas: 7`
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func objects(t *testing.T) []Object {
	return []Object{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Title: "Deployment.apps shop/web", Live: decode(t, deployment),
			Fields: []Field{{"spec.replicas", "/spec/replicas"}, {"metadata.labels.tier", "/metadata/labels/tier"},
				{"spec.template.spec.containers[name=web].image", "/spec/template/spec/containers/0/image"}}},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", Name: "shop-hooks", Title: "ValidatingWebhookConfiguration.admissionregistration.k8s.io shop-hooks",
			Live: decode(t, webhook), Fields: []Field{{"webhooks[name=b.example.com].clientConfig.caBundle", "/webhooks/1/clientConfig/caBundle"}}},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "shop-view", Title: "ClusterRole.rbac.authorization.k8s.io shop-view",
			Live: decode(t, clusterRole), Fields: []Field{{"rules[0].verbs[0]", "/rules/0/verbs/0"}}},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "worker", Title: "Deployment.apps shop/worker", Live: decode(t, other),
			Fields: []Field{{"spec.replicas", "/spec/replicas"}}},
	}
}

// TestAdvise: a rule for each field a controller owns (by name, or by what the field is), none
// for a person's edit or a manager it cannot tell, each saying why.
func TestAdvise(t *testing.T) {
	a := Advise(objects(t), []Scaler{{Namespace: "shop", Name: "web", TargetGroup: "apps", TargetKind: "Deployment", TargetName: "web"}})
	var rules []string
	for _, r := range a.Rules {
		rules = append(rules, r.Object+" "+r.Pointer+" ["+strings.Join(r.Managers, ",")+"] "+r.Why+" indexed="+strconv.FormatBool(r.Indexed)+" wider="+r.Wider+" jq="+r.JQ)
	}
	want := []string{
		"ClusterRole.rbac.authorization.k8s.io shop-view /rules/0/verbs/0 [clusterrole-aggregation-controller] an aggregated ClusterRole: its rules are the aggregation's indexed=true wider=/rules jq=.rules[0].verbs[0]",
		"Deployment.apps shop/web /spec/replicas [kube-controller-manager] HorizontalPodAutoscaler shop/web scales Deployment web indexed=false wider= jq=.spec.replicas",
		`ValidatingWebhookConfiguration.admissionregistration.k8s.io shop-hooks /webhooks/1/clientConfig/caBundle [cert-manager-cainjector] its caBundle is injected (annotation cert-manager.io/inject-ca-from) indexed=true wider=/webhooks jq=.webhooks[] | select(.name == "b.example.com") | .clientConfig.caBundle`,
	}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
	var skipped []string
	for _, s := range a.Skipped {
		skipped = append(skipped, s.Object+" "+s.Path+": "+s.Why)
	}
	wantSkipped := []string{
		"Deployment.apps shop/web metadata.labels.tier: set by kubectl-edit, a person's tool: drift correction should reset it, so no rule",
		"Deployment.apps shop/web spec.template.spec.containers[name=web].image: cannot tell whether mesh-operator is a controller or a person: no rule (write one by hand if it is a controller)",
		"Deployment.apps shop/worker spec.replicas: cannot tell whether rollout-tool is a controller or a person: no rule (write one by hand if it is a controller)",
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(wantSkipped, "\n"))
	}

	// Without the HPA, the replicas field is still kube-controller-manager's: a known controller.
	a = Advise(objects(t)[:1], nil)
	if len(a.Rules) != 1 || !strings.HasPrefix(a.Rules[0].Why, "owned by kube-controller-manager (") {
		t.Errorf("replicas without an HPA: %+v", a.Rules)
	}
	// A person's scale is no rule, HPA or not.
	scaled := objects(t)[:1]
	scaled[0].Live = decode(t, strings.Replace(deployment, "manager: kube-controller-manager", "manager: kubectl", 1))
	if a := Advise(scaled, []Scaler{{Namespace: "shop", Name: "web", TargetKind: "Deployment", TargetName: "web"}}); len(a.Rules) != 0 {
		t.Errorf("kubectl scale got a rule: %+v", a.Rules)
	}
}

// TestWriteParses: the Flux output is a HelmRelease spec fragment whose rules parse as Flux's
// ignore rules and name the fields; the Argo CD output parses strictly as ignoreDifferences,
// and every jq expression compiles with gojq and selects exactly the field on the live object.
func TestWriteParses(t *testing.T) {
	objs := objects(t)
	a := Advise(objs, []Scaler{{Namespace: "shop", Name: "web", TargetGroup: "apps", TargetKind: "Deployment", TargetName: "web"}})
	var b bytes.Buffer
	if err := Write(&b, a, "release shop/web", Flux); err != nil {
		t.Fatal(err)
	}
	var spec struct {
		DriftDetection struct {
			Ignore []flux.IgnoreRule `json:"ignore"`
		} `json:"driftDetection"`
	}
	if err := sigsyaml.UnmarshalStrict(b.Bytes(), &spec); err != nil {
		t.Fatalf("flux output does not parse: %v\n%s", err, b.String())
	}
	if len(spec.DriftDetection.Ignore) != 3 {
		t.Fatalf("%d flux rules, want 3:\n%s", len(spec.DriftDetection.Ignore), b.String())
	}
	for i, r := range spec.DriftDetection.Ignore {
		if err := r.Validate(); err != nil || r.Paths[0] != a.Rules[i].Pointer || r.Target.Kind != a.Rules[i].Kind || r.Target.Name != a.Rules[i].Name {
			t.Errorf("flux rule %d: %+v (%v), want %s of %s", i, r, err, a.Rules[i].Pointer, a.Rules[i].Object)
		}
	}
	for _, w := range []string{"# no rule for Deployment.apps shop/web metadata.labels.tier: set by kubectl-edit",
		"this rule breaks if the list is reordered; index-free but wider: /webhooks", "set by cert-manager-cainjector"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("flux output lacks %q:\n%s", w, b.String())
		}
	}

	b.Reset()
	if err := Write(&b, a, "release shop/web", ArgoCD); err != nil {
		t.Fatal(err)
	}
	var app ArgoCDIgnoreDifferences // parsed strictly: an unknown field fails
	if err := sigsyaml.UnmarshalStrict(b.Bytes(), &app); err != nil {
		t.Fatalf("argocd output does not parse: %v\n%s", err, b.String())
	}
	if len(app.IgnoreDifferences) != 3 {
		t.Fatalf("%d argocd rules, want 3:\n%s", len(app.IgnoreDifferences), b.String())
	}
	byName := map[string]map[string]any{}
	for _, o := range objs {
		byName[o.Kind+"/"+o.Name] = o.Live
	}
	for i, d := range app.IgnoreDifferences {
		live := byName[d.Kind+"/"+d.Name]
		if live == nil || len(d.JQPathExpressions) != 1 {
			t.Fatalf("argocd rule %d: %+v names no live object, or not one expression", i, d)
		}
		got := jq(t, d.JQPathExpressions[0], live)
		want := at(live, a.Rules[i].Pointer)
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("argocd rule %d: %s selects %v on the live object, want exactly %v", i, d.JQPathExpressions[0], got, want)
		}
	}
}

// jq runs expr on v with gojq (Argo CD's own jq library), failing the test if it does not
// compile.
func jq(t *testing.T, expr string, v map[string]any) []any {
	t.Helper()
	q, err := gojq.Parse(expr)
	if err != nil {
		t.Fatalf("jq %q: %v", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		t.Fatalf("jq %q: %v", expr, err)
	}
	var out []any
	iter := code.Run(v)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := x.(error); ok {
			t.Fatalf("jq %q: %v", expr, err)
		}
		out = append(out, x)
	}
	return out
}

// at is the value at an RFC 6901 pointer.
func at(v any, ptr string) any {
	for _, s := range splitPointer(ptr) {
		switch c := v.(type) {
		case map[string]any:
			v = c[s]
		case []any:
			i, _ := strconv.Atoi(s)
			v = c[i]
		}
	}
	return v
}
