package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// summary prints divergences one per line: "CLASS path: chart -> cluster".
func summary(r Result) []string {
	var out []string
	for _, d := range r.Divergences {
		if d.Redacted {
			out = append(out, fmt.Sprintf("%s %s: (redacted)", d.Class, d.Path))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: %v -> %v", d.Class, d.Path, d.Chart, d.Cluster))
	}
	return out
}

var deployment = yaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}

const deploy = `
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: web
          image: web:1
          ports:
            - containerPort: 8080
          env:
            - name: A
              value: "1"
            - name: B
              value: "2"
        - name: sidecar
          image: proxy:1
`

func TestCompare(t *testing.T) {
	tests := map[string]struct {
		typeMeta       yaml.TypeMeta
		chart, cluster string
		want           []string
		compared       int
	}{
		"identical, lists in another order": {
			deployment, deploy,
			`
spec:
  replicas: 2.0
  template:
    spec:
      containers:
        - name: sidecar
          image: proxy:1
        - name: web
          image: web:1
          ports:
            - containerPort: 8080
              protocol: TCP
          env:
            - name: B
              value: "2"
            - name: A
              value: "1"
`, nil, 11},
		"classes": {
			deployment, deploy,
			`
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: web
          image: web:2
          ports:
            - containerPort: 8080
          env:
            - name: A
              value: "1"
            - name: EXTRA
              value: x
`,
			[]string{
				"DIFFERS spec.replicas: 2 -> 3",
				"CHART-ONLY spec.template.spec.containers[name=sidecar].image: proxy:1 -> <nil>",
				"CHART-ONLY spec.template.spec.containers[name=sidecar].name: sidecar -> <nil>",
				"CHART-ONLY spec.template.spec.containers[name=web].env[name=B].name: B -> <nil>",
				"CHART-ONLY spec.template.spec.containers[name=web].env[name=B].value: 2 -> <nil>",
				"CLUSTER-ONLY spec.template.spec.containers[name=web].env[name=EXTRA].name: <nil> -> EXTRA",
				"CLUSTER-ONLY spec.template.spec.containers[name=web].env[name=EXTRA].value: <nil> -> x",
				"DIFFERS spec.template.spec.containers[name=web].image: web:1 -> web:2",
			}, 13},
		"service ports by port and protocol": {
			yaml.TypeMeta{APIVersion: "v1", Kind: "Service"},
			"spec:\n  ports:\n    - port: 80\n      targetPort: 8080\n    - port: 53\n      protocol: UDP\n",
			"spec:\n  ports:\n    - port: 53\n      protocol: UDP\n    - port: 80\n      protocol: TCP\n      targetPort: 9090\n",
			[]string{"DIFFERS spec.ports[port=80,protocol=TCP].targetPort: 8080 -> 9090"}, 5},
		"unknown kind: lists by index": {
			yaml.TypeMeta{APIVersion: "example.io/v1", Kind: "Widget"},
			"spec:\n  items: [a, b]\n", "spec:\n  items: [b, a]\n",
			[]string{"DIFFERS spec.items[0]: a -> b", "DIFFERS spec.items[1]: b -> a"}, 2},
		"secret values never carried": {
			yaml.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			"type: Opaque\ndata:\n  password: c2VjcmV0\n  only-chart: eA==\n", "type: Opaque\ndata:\n  password: b3RoZXI=\n",
			[]string{"CHART-ONLY data.only-chart: (redacted)", "DIFFERS data.password: (redacted)"}, 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Compare(tc.typeMeta, obj(t, tc.chart), obj(t, tc.cluster))
			if diff := cmp.Diff(tc.want, summary(r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if r.Compared != tc.compared {
				t.Errorf("compared %d fields, want %d", r.Compared, tc.compared)
			}
		})
	}
}

// TestCompareSelf: an object compared with itself has no divergence, whatever it holds.
func TestCompareSelf(t *testing.T) {
	for _, s := range []string{deploy, "a: {b: [1, {c: null}], d: []}", "spec: {}"} {
		o := obj(t, s)
		if r := Compare(deployment, o, o); len(r.Divergences) != 0 {
			t.Errorf("%q against itself: %v", s, summary(r))
		}
	}
}

// TestSecretValuesNeverInResult plants a marker in a Secret and checks no field of the result
// holds it.
func TestSecretValuesNeverInResult(t *testing.T) {
	r := Compare(yaml.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		obj(t, "stringData:\n  token: MARKER-1\n"), obj(t, "data:\n  token: TUFSS0VSLTI=\n"))
	if s := fmt.Sprintf("%#v", r); strings.Contains(s, "MARKER") || strings.Contains(s, "TUFSS0VSLTI=") {
		t.Errorf("a Secret value is in the result: %s", s)
	}
}

// TestFold: an entry only one side has is one row; one an ignore rule cut into stays leaf by
// leaf; a Secret's whole data entry is one row without values.
func TestFold(t *testing.T) {
	chart := `
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - {name: A, value: "1"}
`
	cluster := `
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - {name: A, value: "1"}
            - {name: TRACING, value: "on"}
          securityContext: {runAsUser: 1000, runAsGroup: 1000}
`
	pod := "spec.template.spec.containers[name=web]."
	r := Compare(deployment, obj(t, chart), obj(t, cluster))
	Fold(&r)
	want := []string{
		"CLUSTER-ONLY " + pod + "env[name=TRACING]: <nil> -> map[name:TRACING value:on]",
		"CLUSTER-ONLY " + pod + "securityContext: <nil> -> map[runAsGroup:1000 runAsUser:1000]",
	}
	if diff := cmp.Diff(want, summary(r)); diff != "" {
		t.Errorf("folded (-want +got):\n%s", diff)
	}

	r = Compare(deployment, obj(t, chart), obj(t, cluster))
	r.Divergences = r.Divergences[1:] // as if an ignore rule dropped one leaf of the env entry
	Fold(&r)
	if got := len(r.Divergences); got != 2 {
		t.Errorf("partly ignored entry: %d rows, want 2 (the env leaf left, securityContext folded): %v", got, summary(r))
	}

	secret := yaml.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	r = Compare(secret, obj(t, "data: {a: YQ==}"), obj(t, "data: {a: YQ==, b: Yg==}\nmetadata: {annotations: {x: 'y'}}"))
	Fold(&r)
	if diff := cmp.Diff([]string{"CLUSTER-ONLY data.b: (redacted)", "CLUSTER-ONLY metadata.annotations.x: (redacted)"}, summary(r)); diff != "" {
		t.Errorf("secret (-want +got):\n%s", diff)
	}
}
