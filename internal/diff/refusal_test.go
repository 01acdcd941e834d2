package diff

import (
	"github.com/helm-drift/helm-drift/internal/diff/difftest"

	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRefusalOf(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	immutable := apierrors.NewInvalid(deploy, "web", field.ErrorList{
		field.Invalid(field.NewPath("spec", "selector"), map[string]string{"app": "web-v2"}, "field is immutable")})
	for _, tc := range []struct {
		name string
		err  error
		kind string
		want string // "" = no refusal
	}{
		{"an immutable field, its value left out", immutable, "Deployment", "422 Invalid spec.selector: spec.selector: field is immutable"},
		{"an admission policy's denial", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New(`ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must be pinned`)), "ConfigMap",
			"403 Forbidden : configmaps \"web\" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must be pinned"},
		{"a full quota", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "extra", errors.New("exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2")), "ConfigMap",
			"403 Forbidden : configmaps \"extra\" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"},
		{"a permission the user lacks is no refusal", apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New(`User "dev" cannot patch resource "deployments" in API group "apps" in the namespace "shop"`)), "Deployment", ""},
		{"a server error is no refusal", apierrors.NewInternalError(errors.New("etcd timeout")), "Deployment", ""},
		{"a Secret: the reason only", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "creds", field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2", "bad")}), "Secret", "422 Invalid data.password: 422 Invalid (the message is not shown for a Secret)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := refusalOf(tc.err, tc.kind)
			got := ""
			if r != nil {
				got = fmt.Sprintf("%d %s %s: %s", r.Code, r.Reason, r.Field, r.Message)
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if strings.Contains(got, "web-v2") || strings.Contains(got, "hunter2") {
				t.Errorf("a refused value is quoted: %s", got)
			}
		})
	}
}

// TestRunWillFail: an object the API server refuses to take is WILL-FAIL: its rows are not
// resolved, the report counts it, and it is drift for either exit-code rule.
func TestRunWillFail(t *testing.T) {
	immutable := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "app", field.ErrorList{field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set")})
	cl := &difftest.Cluster{Objects: difftest.Objects(t, cmApp), Refuse: immutable}
	desired := strings.Replace(cmApp, "mode: fast", "mode: slow", 1)
	for _, tc := range []struct {
		mode     Mode
		rendered bool
		willFail int
	}{{Auto, true, 1}, {Server, true, 1}, {Offline, true, 0}, {Auto, false, 0}} {
		rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Desired: desired, Previous: cmApp, Rendered: tc.rendered, Options: Options{Normalize: tc.mode}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.WillFail != tc.willFail {
			t.Errorf("%s (rendered %v): %d will fail, want %d", tc.mode, tc.rendered, rep.WillFail, tc.willFail)
			continue
		}
		if tc.willFail == 0 {
			continue
		}
		o := rep.Objects[0]
		if o.Refusal == nil || o.Refusal.Field != "data" || o.Rows[0].Resolved || rep.Tally().Verdict(ExitOnChange) != Diverging || rep.Tally().Verdict(ExitOnDrift) != Diverging {
			t.Errorf("%s: refusal %+v, rows %+v: want the rows unresolved and the report drifted", tc.mode, o.Refusal, o.Rows)
		}
	}
}

// TestRunWillFailOffline: offline, the API server's update validation finds an immutable
// selector change without asking the cluster.
func TestRunWillFailOffline(t *testing.T) {
	deploy := func(gen string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  selector:
    matchLabels: {app: web, generation: ` + gen + `}
  template:
    metadata:
      labels: {app: web, generation: ` + gen + `}
    spec:
      containers:
      - name: web
        image: nginx`
	}
	cl := &difftest.Cluster{Objects: difftest.Objects(t, deploy("v1"))}
	for _, tc := range []struct {
		gen      string
		willFail int
	}{{"v2", 1}, {"v1", 0}} {
		desired := strings.Replace(deploy(tc.gen), "image: nginx", "image: nginx:1.28", 1)
		rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Desired: desired, Previous: deploy("v1"), Rendered: true, Options: Options{Normalize: Offline}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.WillFail != tc.willFail {
			t.Errorf("generation %s: %d will fail, want %d: %+v", tc.gen, rep.WillFail, tc.willFail, rep.Objects)
			continue
		}
		if tc.willFail == 1 && (rep.Objects[0].Refusal.Field != "spec.selector" || !strings.Contains(rep.Objects[0].Refusal.Message, "field is immutable")) {
			t.Errorf("refusal %+v: want spec.selector, field is immutable", rep.Objects[0].Refusal)
		}
	}
}

// TestRunWillFailOfflineCustomResource: offline, a custom resource the upgrade changes past its
// CRD's schema, or against a CEL transition rule, is WILL-FAIL with the field; a value the
// upgrade leaves as it was is not judged again (ratcheting), and a valid change is no refusal.
func TestRunWillFailOfflineCustomResource(t *testing.T) {
	widget := func(size, mode string, colour ...string) string {
		return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: apps}\nspec: {size: " + size + ", mode: " + mode + ", colour: " + strings.Join(append(colour, "red")[:1], "") + "}"
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{
			"size":   map[string]any{"type": "integer", "maximum": int64(10)},
			"colour": map[string]any{"type": "string"},
			"mode":   map[string]any{"type": "string", "x-kubernetes-validations": []any{map[string]any{"rule": "self == oldSelf", "message": "mode is immutable"}}},
		}},
	}}
	for _, tc := range []struct {
		name, live, desired, field string
	}{
		{"valid", widget("5", "fast"), widget("7", "fast"), ""},
		{"past the maximum", widget("5", "fast"), widget("20", "fast"), "spec.size"},
		{"transition rule", widget("5", "fast"), widget("5", "safe"), "spec.mode"},
		{"past the maximum, left as it was (ratcheting)", widget("20", "fast"), widget("20", "fast", "blue"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &difftest.Cluster{Objects: difftest.Objects(t, tc.live), Schemas: map[string]map[string]any{"Widget": schema}}
			rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Desired: tc.desired, Previous: widget("5", "fast"), Rendered: true, Options: Options{Normalize: Offline}})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if r := rep.Objects[0].Refusal; r != nil {
				got = r.Field
			}
			if got != tc.field || (tc.field != "") != (rep.WillFail == 1) {
				t.Errorf("refusal field %q, will fail %d; want %q\n%+v", got, rep.WillFail, tc.field, rep.Objects[0])
			}
		})
	}
}
