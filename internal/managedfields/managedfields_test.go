package managedfields

import (
	"reflect"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// live is a Deployment as the API server returns it after a Helm 4 server-side apply and an
// env entry added by kubectl patch.
const live = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    meta.helm.sh/release-name: web
  managedFields:
  - manager: helm
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:annotations: {f:meta.helm.sh/release-name: {}}}
      f:spec:
        f:replicas: {}
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:image: {}
                f:name: {}
                f:env:
                  k:{"name":"A"}: {.: {}, f:name: {}, f:value: {}}
  - manager: kubectl-patch
    operation: Update
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                f:env:
                  k:{"name":"B"}: {.: {}, f:name: {}, f:value: {}}
  - manager: kube-controller-manager
    operation: Update
    subresource: status
    fieldsType: FieldsV1
    fieldsV1: {f:status: {f:replicas: {}}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: nginx
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
`

func TestOwners(t *testing.T) {
	var obj map[string]any
	if err := sigsyaml.Unmarshal([]byte(live), &obj); err != nil {
		t.Fatal(err)
	}
	ms := Fields(obj)
	if len(ms) != 3 {
		t.Fatalf("managers: got %d, want 3", len(ms))
	}
	h, ok := Helm(obj, ms)
	if !ok || h.Name != "helm" || h.Operation != "Apply" {
		t.Fatalf("Helm: got %+v %v", h, ok)
	}
	for _, tc := range []struct {
		pointer string
		want    []string
	}{
		{"/spec/replicas", []string{"helm"}},
		{"/spec/template/spec/containers/0/image", []string{"helm"}},
		{"/spec/template/spec/containers/0/env/0/value", []string{"helm"}},
		{"/spec/template/spec/containers/0/env/1/value", []string{"kubectl-patch"}},
		{"/spec/template/spec/containers/0/env/1", []string{"kubectl-patch"}},
		{"/spec/template/spec/containers/0", []string{"helm", "kubectl-patch"}},
		{"/spec/template/spec/containers/5/image", nil},
		{"/status/replicas", nil}, // a subresource's manager never owns the object's fields
		{"/spec/paused", nil},
	} {
		got := Names(Owners(obj, ms, tc.pointer))
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Owners(%s) = %v, want %v", tc.pointer, got, tc.want)
		}
	}
}
