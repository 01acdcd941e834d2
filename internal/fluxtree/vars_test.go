package fluxtree

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestHelmReleaseVars: a HelmRelease's Vars are the substitution variables its text and its
// valuesFrom ConfigMaps refer to (a default and an escaped reference read as envsubst reads
// them; none of its own when it opts out; not those of a ConfigMap it does not read),
// while SecretVars withhold every value its Kustomization takes from a Secret.
func TestHelmReleaseVars(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"clusters/c/sync.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1h, path: ./clusters/c, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {REPLICAS: "2", LEVEL: debug, UNUSED: x, CM_VAR: c, OTHER: o}
    substituteFrom: [{kind: Secret, name: vars}]
---
apiVersion: v1
kind: Secret
metadata: {name: vars, namespace: flux-system}
stringData: {TOKEN: s3cr3t-token}
`,
		"apps/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: a, namespace: apps}
spec:
  interval: 1h
  chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}
  values: {replicas: "${REPLICAS}", level: "${LEVEL:=info}", literal: "$${TOKEN}"}
  valuesFrom: [{kind: ConfigMap, name: a-values}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-values, namespace: apps}
data: {values.yaml: "cm: ${CM_VAR}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unread, namespace: apps}
data: {x: "${OTHER}"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: b
  namespace: apps
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
spec:
  interval: 1h
  chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}
  values: {replicas: "${REPLICAS}"}
`,
	}
	writeFiles(t, root, files)
	tree, err := Load(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Problems) > 0 {
		t.Fatal(tree.Problems)
	}
	got := map[string]string{}
	for _, h := range tree.HelmReleases {
		var names []string
		for n := range h.Vars {
			names = append(names, n)
		}
		slices.Sort(names)
		got[h.Name] = strings.Join(names, ",") + " | secret values " + strings.Join(h.SecretVars, ",")
	}
	want := map[string]string{
		"a": "CM_VAR,LEVEL,REPLICAS | secret values s3cr3t-token",
		"b": " | secret values s3cr3t-token",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("HelmRelease %s: %q, want %q", name, got[name], w)
		}
	}
}
