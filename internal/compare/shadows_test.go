package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindShadows(t *testing.T) {
	pod := obj(t, `
containers:
  - name: web
    envFrom:
      - configMapRef: {name: settings}
      - secretRef: {name: creds}
        prefix: DB_
    env:
      - name: LOG_LEVEL
        value: debug
      - name: REGION
        value: eu
      - name: DB_PASSWORD
        value: SECRET-MARKER-inline
      - name: DB_USER
        valueFrom: {fieldRef: {fieldPath: metadata.name}}
      - name: UNRELATED
        value: x
  - name: missing-source
    envFrom:
      - configMapRef: {name: absent}
    env:
      - name: LOG_LEVEL
        value: debug
`)
	sources := map[string]map[string]string{
		"ConfigMap/settings": {"LOG_LEVEL": "info", "REGION": "eu"},
		"Secret/creds":       {"PASSWORD": "SECRET-MARKER-source", "USER": "app"},
	}
	source := func(kind, name string) (map[string]string, bool) {
		d, ok := sources[kind+"/"+name]
		return d, ok
	}
	var got []string
	for _, s := range FindShadows(pod, "spec.template.spec", source) {
		got = append(got, fmt.Sprintf("%s %s from %s: known=%v agree=%v secret=%v", s.Path, s.Env, s.From, s.Known, s.Agree, s.Secret))
	}
	want := []string{
		`spec.template.spec.containers[name=web].env[name=LOG_LEVEL] LOG_LEVEL from ConfigMap settings: known=true agree=false secret=false`,
		`spec.template.spec.containers[name=web].env[name=REGION] REGION from ConfigMap settings: known=true agree=true secret=false`,
		`spec.template.spec.containers[name=web].env[name=DB_PASSWORD] DB_PASSWORD from Secret creds (prefix "DB_"): known=true agree=false secret=true`,
		`spec.template.spec.containers[name=web].env[name=DB_USER] DB_USER from Secret creds (prefix "DB_"): known=false agree=false secret=true`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if s := fmt.Sprintf("%#v", FindShadows(pod, "spec", source)); strings.Contains(s, "SECRET-MARKER") {
		t.Errorf("a value is carried in the shadows: %s", s)
	}
}
