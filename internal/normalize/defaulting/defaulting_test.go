package defaulting

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.YAMLToJSON([]byte(s))
	out, err := decodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// at returns the value at path (map keys; ints index lists), and whether it is there.
func at(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			v = l[k]
		}
	}
	return v, true
}

// TestBuiltIn checks what the API server's write does to the fields public charts write and
// a server drops, defaults or fills from others.
func TestBuiltIn(t *testing.T) {
	obj := decode(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: null}
spec:
  replicas: null
  minReadySeconds: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      hostNetwork: false
      affinity: {podAffinity: null}
      securityContext: {supplementalGroups: [], sysctls: []}
      containers:
      - name: web
        image: nginx:1.27
        env:
        - {name: A, value: ""}
        envFrom: null
        lifecycle: null
        resources: {limits: {}}
        readinessProbe: {httpGet: {port: 80}, initialDelaySeconds: 0}
        volumeMounts: [{name: v, mountPath: /v, readOnly: false}]
      volumes:
      - name: v
        projected: {sources: [{configMap: {name: c}}]}
`)
	out, ok, err := BuiltIn(obj)
	if err != nil || !ok {
		t.Fatalf("BuiltIn: ok %v, %v", ok, err)
	}
	pod := []any{"spec", "template", "spec"}
	c := append(append([]any{}, pod...), "containers", 0)
	for _, tc := range []struct {
		name string
		path []any
		want any // nil: absent
	}{
		{"replicas null is defaulted", []any{"spec", "replicas"}, int64(1)},
		{"zero omitempty dropped", []any{"spec", "minReadySeconds"}, nil},
		{"null annotations dropped", []any{"metadata", "annotations"}, nil},
		{"hostNetwork false dropped", append(append([]any{}, pod...), "hostNetwork"), nil},
		{"serviceAccount filled from serviceAccountName", append(append([]any{}, pod...), "serviceAccount"), "web"},
		{"empty podAffinity dropped", append(append([]any{}, pod...), "affinity"), map[string]any{}},
		{"empty lists dropped", append(append([]any{}, pod...), "securityContext"), map[string]any{}},
		{"env value empty dropped", append(append([]any{}, c...), "env", 0), map[string]any{"name": "A"}},
		{"null envFrom dropped", append(append([]any{}, c...), "envFrom"), nil},
		{"empty limits dropped", append(append([]any{}, c...), "resources"), map[string]any{}},
		{"probe defaults", append(append([]any{}, c...), "readinessProbe", "periodSeconds"), int64(10)},
		{"readOnly false dropped", append(append([]any{}, c...), "volumeMounts", 0, "readOnly"), nil},
		{"imagePullPolicy defaulted", append(append([]any{}, c...), "imagePullPolicy"), "IfNotPresent"},
		{"projected defaultMode", append(append([]any{}, pod...), "volumes", 0, "projected", "defaultMode"), int64(0o644)},
		{"strategy defaulted", []any{"spec", "strategy", "rollingUpdate", "maxSurge"}, "25%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, has := at(out, tc.path...)
			if tc.want == nil {
				if has {
					t.Errorf("%v = %v, want it absent", tc.path, got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%v (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

func TestBuiltInUnknownKind(t *testing.T) {
	_, ok, err := BuiltIn(decode(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"))
	if ok || err != nil {
		t.Fatalf("ok %v, err %v; want not ok, no error", ok, err)
	}
}

// TestSecretErrorQuotesNothing: a Secret that does not decode is refused without its content.
func TestSecretErrorQuotesNothing(t *testing.T) {
	_, _, err := BuiltIn(decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: 'hunter2-not-base64!'}\n"))
	if err == nil {
		t.Fatal("want an error for data that is not base64")
	}
	if got := err.Error(); strings.Contains(got, "hunter2") {
		t.Fatalf("error quotes the value: %s", got)
	}
}

func TestCustomResource(t *testing.T) {
	schema := decode(t, `
type: object
properties:
  spec:
    type: object
    properties:
      size: {type: integer, default: 3}
      mode: {type: string}
      note: {type: string, nullable: true}
      extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	obj := decode(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, labels: null}
spec:
  mode: null
  note: null
  unknown: 1
  extra: {anything: [1]}
`)
	sch, err := NewSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := CustomResource(obj, sch)
	if err != nil {
		t.Fatal(err)
	}
	want := decode(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  size: 3
  note: null
  extra: {anything: [1]}
`)
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEmulate(t *testing.T) {
	if note := Emulate("v" + Version + ".0"); note != "" {
		t.Errorf("same minor: note %q, want none", note)
	}
	sts := func() any {
		out, _, err := BuiltIn(decode(t, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec: {serviceName: db, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := at(out, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
		return v
	}
	if got := sts(); got == nil {
		t.Fatalf("v%s: StatefulSet maxUnavailable not defaulted (is MaxUnavailableStatefulSet still gated?)", Version)
	}
	// v1.34 had the gate off: its API server does not default the field.
	if note := Emulate("v1.34.2"); !strings.Contains(note, "feature gates of v1.34") {
		t.Errorf("v1.34: note %q", note)
	}
	if got := sts(); got != nil {
		t.Errorf("v1.34: StatefulSet maxUnavailable = %v, want none (gate off)", got)
	}
	if note := Emulate("v1.99.0"); !strings.Contains(note, "not known") {
		t.Errorf("v1.99: note %q", note)
	}
}

// TestValidateCustomResourceUpdate: a CRD's schema bound and CEL transition rule refuse an
// update as the API server does, ratcheting a value the update leaves as it was, and the
// messages never quote the value.
func TestValidateCustomResourceUpdate(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{
			"size": map[string]any{"type": "integer", "maximum": int64(10)},
			"mode": map[string]any{"type": "string", "enum": []any{"fast", "safe"},
				"x-kubernetes-validations": []any{map[string]any{"rule": "self == oldSelf", "message": "mode is immutable"}}},
		}},
	}}
	widget := func(size int64, mode string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
			"spec": map[string]any{"size": size, "mode": mode}}
	}
	for _, tc := range []struct {
		name       string
		next, live map[string]any
		want       string
	}{
		{"valid change", widget(7, "fast"), widget(5, "fast"), ""},
		{"past the maximum", widget(12345, "fast"), widget(5, "fast"), "spec.size: Invalid value: spec.size in body should be less than or equal to 10"},
		{"unchanged past a new maximum (ratcheting)", widget(12345, "fast"), widget(12345, "fast"), ""},
		{"transition rule", widget(5, "safe"), widget(5, "fast"), "spec.mode: Invalid value: mode is immutable"},
		{"not in the enum", widget(5, "slowest"), widget(5, "fast"), "spec.mode: Unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch, err := NewSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			refused, err := ValidateCustomResourceUpdate(context.Background(), tc.next, tc.live, sch)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refused {
				got = append(got, r.Field+": "+r.Detail)
			}
			all := strings.Join(got, "; ")
			if (tc.want == "") != (all == "") || !strings.Contains(all, tc.want) || strings.Contains(all, "12345") || strings.Contains(all, "slowest") {
				t.Errorf("got %q, want %q (and never the value)", all, tc.want)
			}
		})
	}
}
