package compare

import "testing"

func TestMarkInert(t *testing.T) {
	chart := obj(t, `
spec:
  template:
    spec:
      containers:
        - name: web
          startupProbe: {httpGet: {path: /healthz, port: 8080}}
          livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 10}
        - name: side
          livenessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 10}
`)
	live := obj(t, `
spec:
  template:
    spec:
      containers:
        - name: web
          startupProbe: {httpGet: {path: /healthz, port: 8080}}
          livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 30}
        - name: side
          livenessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 30}
`)
	r := Compare(deployment, chart, live)
	MarkInert(&r, chart, live)
	got := map[string]bool{}
	for _, d := range r.Divergences {
		got[d.Path] = d.Inert
	}
	want := map[string]bool{
		"spec.template.spec.containers[name=web].livenessProbe.initialDelaySeconds":  true,
		"spec.template.spec.containers[name=side].livenessProbe.initialDelaySeconds": false,
	}
	if len(got) != len(want) {
		t.Fatalf("divergences %v, want %v", got, want)
	}
	for p, inert := range want {
		if got[p] != inert {
			t.Errorf("%s: inert %v, want %v", p, got[p], inert)
		}
	}
}
