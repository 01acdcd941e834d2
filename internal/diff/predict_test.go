package diff

import (
	"fmt"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

const lastManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      annotations: {old: "1"}
    spec:
      containers:
      - name: web
        image: nginx
`

const newManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: nginx
`

// liveDeployment is the cluster's object: replicas changed by kubectl-patch, an env entry added
// by sidecar-injector, the old annotation still there; Helm's manager is helm, with op.
func liveDeployment(t *testing.T, op string) map[string]any {
	t.Helper()
	var obj map[string]any
	err := sigsyaml.Unmarshal([]byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  annotations: {meta.helm.sh/release-name: web}
  managedFields:
  - manager: helm
    operation: `+op+`
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:annotations: {f:meta.helm.sh/release-name: {}}}
      f:spec:
        f:template:
          f:metadata: {f:annotations: {f:old: {}}}
          f:spec:
            f:containers:
              k:{"name":"web"}: {.: {}, f:image: {}, f:name: {}}
  - manager: kubectl-patch
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}}}
  - manager: sidecar-injector
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                f:env:
                  k:{"name":"X"}: {.: {}, f:name: {}, f:value: {}}
spec:
  replicas: 3
  template:
    metadata:
      annotations: {old: "1"}
    spec:
      containers:
      - name: web
        image: nginx
        env:
        - {name: X, value: "1"}
`), &obj)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestPredict(t *testing.T) {
	desired, err := objectsOf(newManifest, "new")
	if err != nil {
		t.Fatal(err)
	}
	last, _ := objectsOf(lastManifest, "last")
	for _, tc := range []struct {
		op   string
		in   Input
		want map[string]string // path → resolved + why
	}{
		{"Update", Input{}, map[string]string{ // Helm 3: three-way merge
			"spec.replicas":                                             "true resets it to the chart's value",
			"spec.template.metadata.annotations.old":                    "true removes it (in the last release, not in the new render)",
			"spec.template.spec.containers[name=web].env[name=X].value": "false kept: the chart does not state it (set by sidecar-injector)",
		}},
		{"Apply", Input{}, map[string]string{ // Helm 4: server-side apply
			"spec.replicas":                                             "false conflict with kubectl-patch: helm upgrade fails unless --force-conflicts",
			"spec.template.metadata.annotations.old":                    "true removes it (in the last release, not in the new render)",
			"spec.template.spec.containers[name=web].env[name=X].value": "false kept: the chart does not state it (set by sidecar-injector)",
		}},
		{"Apply", Input{ForceConflicts: true}, map[string]string{ // --force-conflicts takes the field over
			"spec.replicas": "true resets it to the chart's value, taking it from kubectl-patch (--force-conflicts)",
		}},
		{"Update", Input{ForceReplace: true}, map[string]string{ // --force replaces the object
			"spec.replicas": "true replaced: the upgrade replaces the object with the chart's (--force)",
			"spec.template.spec.containers[name=web].env[name=X].value": "true replaced: the upgrade replaces the object with the chart's (--force)",
		}},
		{"Update", Input{Apply: ApplyServerSide}, map[string]string{ // --server-side=true on a Helm 3 release
			"spec.replicas": "false conflict with kubectl-patch: helm upgrade fails unless --force-conflicts",
		}},
	} {
		t.Run(tc.op+fmt.Sprintf("%+v", tc.in), func(t *testing.T) {
			tg := &target{ob: desired[0], prev: &last[0], live: liveDeployment(t, tc.op)}
			tg.id.Namespace = "apps"
			tm := kyaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
			d, _ := desired[0].Decode()
			chart := normalize.Object(withNamespace(d, "apps"), "apps")
			res := compare.Compare(tm, chart, normalize.Object(tg.live, ""))
			p := (&measure{in: tc.in}).predictor(tm, tg, withNamespace(d, "apps"))
			if p.serverSide != (tc.op == "Apply" || tc.in.Apply == ApplyServerSide) {
				t.Errorf("serverSide = %v", p.serverSide)
			}
			seen := 0
			for _, dv := range res.Divergences {
				row := Row{Class: dv.Class, Path: dv.Path, Pointer: dv.Pointer}
				p.predict(&row)
				want, ok := tc.want[row.Path]
				if !ok {
					continue
				}
				seen++
				got := map[bool]string{true: "true ", false: "false "}[row.Resolved] + row.Why
				if got != want {
					t.Errorf("%s: %q, want %q", row.Path, got, want)
				}
				if row.Path == "spec.template.metadata.annotations.old" && !row.PendingDeletion {
					t.Errorf("%s: not marked pending deletion", row.Path)
				}
			}
			if seen != len(tc.want) {
				t.Errorf("saw %d of the %d rows: %+v", seen, len(tc.want), res.Divergences)
			}
		})
	}
}
