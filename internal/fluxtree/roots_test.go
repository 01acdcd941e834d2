package fluxtree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/sops"
)

// TestUnapplied: a directory of Kustomizations is a root unless a Kustomization of another
// directory applies it from this repository (its spec.path holds it); when every one is applied
// by another (a cycle), all are.
func TestUnapplied(t *testing.T) {
	ks := func(file, path string, this bool) ksRef {
		return ksRef{obj: map[string]any{"spec": map[string]any{"path": path, "this": this}}, file: file}
	}
	readsThis := func(k ksRef) bool { return k.obj["spec"].(map[string]any)["this"].(bool) }
	for _, tc := range []struct {
		name string
		all  []ksRef
		want []string
	}{
		{"a cluster applies the apps", []ksRef{ks("flux/cluster/ks.yaml", "./apps", true), ks("apps/web/ks.yaml", "./apps/web/app", true)}, []string{"flux/cluster"}},
		{"another repository's path is not this one's", []ksRef{ks("flux/cluster/ks.yaml", "./apps", false), ks("apps/web/ks.yaml", "./apps/web/app", true)}, []string{"apps/web", "flux/cluster"}},
		{"a path that holds neither", []ksRef{ks("flux/cluster/ks.yaml", "./infra", true), ks("apps/web/ks.yaml", "./apps/web/app", true)}, []string{"apps/web", "flux/cluster"}},
		{"the root path applies everything", []ksRef{ks("clusters/a/ks.yaml", "./", true), ks("apps/ks.yaml", "./apps/x", true)}, []string{"clusters/a"}},
		{"a directory's own path is no reason", []ksRef{ks("apps/ks.yaml", "./apps", true)}, []string{"apps"}},
		{"a cycle", []ksRef{ks("a/ks.yaml", "./b", true), ks("b/ks.yaml", "./a", true)}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := map[string]bool{}
			for _, k := range tc.all {
				dirs[filepath.Dir(k.file)] = true
			}
			got := unapplied(dirs, tc.all, readsThis)
			if keys := slices.Sorted(func(yield func(string) bool) {
				for d := range got {
					if !yield(d) {
						return
					}
				}
			}); !slices.Equal(keys, tc.want) {
				t.Errorf("roots %v, want %v", keys, tc.want)
			}
		})
	}
}

// operatorTree is a repository laid out for the Flux Operator (no bootstrap Kustomization: a
// FluxInstance makes the GitRepository and the Kustomization of flux/cluster in the cluster):
// cluster-apps applies ./apps and substitutes its variables from objects the apps apply
// themselves, and gives each app's Kustomization the same substitutions, as such repositories
// do by a patch; files replaces or adds files.
func operatorTree(files map[string]string) map[string]string {
	out := map[string]string{
		"flux/cluster/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: cluster-apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  decryption: {provider: sops, secretRef: {name: sops-age}}
  postBuild:
    substituteFrom:
    - {kind: ConfigMap, name: cluster-settings}
    - {kind: Secret, name: age}
  patches:
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: |-
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata: {name: all}
      spec:
        decryption: {provider: sops, secretRef: {name: sops-age}}
        postBuild:
          substituteFrom:
          - {kind: ConfigMap, name: cluster-settings}
          - {kind: Secret, name: age}
`,
		"apps/kustomization.yaml": "resources: [settings.yaml, secret.yaml, web/ks.yaml]\n",
		"apps/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-settings, namespace: flux-system}
data: {CLUSTER: home}
`,
		"apps/web/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps/web/app
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"apps/web/app/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: web}
spec:
  interval: 1h
  chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}
  values: {cluster: "${CLUSTER}", token: "${key}"}
`,
		// Not applied by anything here: a root of its own.
		"standalone/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: standalone, namespace: flux-system}
spec: {interval: 1h, path: ./standalone/app, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"standalone/app/hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: alone, namespace: web}
spec: {interval: 1h, chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}}}}
`,
	}
	for name, text := range files {
		out[name] = text
	}
	return out
}

// TestOperatorLayout: without a bootstrap Kustomization, an app's Kustomization is built in
// the context of the cluster Kustomization that applies it, not as a root of its own; the
// substituteFrom objects that Kustomization applies itself are read from its own build; and a
// SOPS-encrypted one is, without its key, substituted as written ("${key}", named in a note, its
// digest that of the ciphertext), and with its key, decrypted.
func TestOperatorLayout(t *testing.T) {
	secret, err := os.ReadFile("../../testdata/sops/age.yaml") // stringData.key decrypts to "value"
	if err != nil {
		t.Fatal(err)
	}
	encrypted := strings.Replace(string(secret), "  name: age\n", "  name: age\n  namespace: flux-system\n", 1)
	root := t.TempDir()
	writeFiles(t, root, operatorTree(map[string]string{"apps/secret.yaml": encrypted}))
	key, err := sops.LoadIdentities("../../testdata/sops/age.agekey")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                 string
		ids                  sops.Identities
		token                string
		sealed               bool
		unsubstituted, notIn string
	}{
		{"without the key", sops.Identities{}, "${key}", true, "Secret flux-system/age (postBuild.substituteFrom of Kustomization flux-system/cluster-apps): SOPS-encrypted, not decrypted; its variables (key) are left as written", "value"},
		{"with the key", key, "value", false, "", "${key}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := Load(context.Background(), root, Options{Work: t.TempDir(), SOPS: tc.ids})
			if err != nil {
				t.Fatal(err)
			}
			if len(tree.Problems) > 0 {
				t.Fatal(tree.Problems)
			}
			byName := map[string]*HelmRelease{}
			for _, h := range tree.HelmReleases {
				byName[h.Name] = h
			}
			web, alone := byName["web"], byName["alone"]
			if web == nil || alone == nil {
				t.Fatalf("HelmReleases %v, want web and alone", tree.HelmReleases)
			}
			if web.Context != "flux/cluster" || strings.Join(web.Via, " > ") != "flux-system/flux-system > flux-system/cluster-apps > flux-system/web" {
				t.Errorf("web: context %q via %v, want flux/cluster through cluster-apps", web.Context, web.Via)
			}
			if alone.Context != "standalone" {
				t.Errorf("alone: context %q, want its own root standalone", alone.Context)
			}
			values := web.Object["spec"].(map[string]any)["values"].(map[string]any)
			if values["cluster"] != "home" || values["token"] != tc.token {
				t.Errorf("web's values %v, want cluster home, token %q", values, tc.token)
			}
			if v := web.Vars["key"]; v.Sealed != tc.sealed || v.Digest == "" {
				t.Errorf("web's ${key}: %+v, want sealed %v, a digest", v, tc.sealed)
			}
			if got := strings.Join(tree.Unsubstituted, "\n"); tc.unsubstituted == "" && got != "" || !strings.Contains(got, tc.unsubstituted) {
				t.Errorf("unsubstituted notes %q, want %q", got, tc.unsubstituted)
			}
			if tc.sealed && slices.Contains(web.SecretVars, tc.notIn) || !tc.sealed && !slices.Contains(web.SecretVars, "value") {
				t.Errorf("web's secret values %v", web.SecretVars)
			}
		})
	}

	// The ciphertext moved: so does the digest, though the text substituted stays "${key}".
	before, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"apps/secret.yaml": strings.Replace(encrypted, "data:mHeXsmQ=", "data:mHeXsmR=", 1)})
	after, err := Load(context.Background(), root, Options{Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	web := func(t *Tree) Var {
		for _, h := range t.HelmReleases {
			if h.Name == "web" {
				return h.Vars["key"]
			}
		}
		return Var{}
	}
	b, a := web(before), web(after)
	if !a.Sealed || a.Digest == b.Digest {
		t.Errorf("the ciphertext changed: %+v → %+v, want another digest", b, a)
	}
}

// TestSubstituteFromMissing: a substituteFrom object neither the context nor the Kustomization
// itself applies is named, with what to do; an optional one is skipped.
func TestSubstituteFromMissing(t *testing.T) {
	for _, tc := range []struct {
		name, settings, want string
	}{
		{"required", "{kind: ConfigMap, name: elsewhere}", "postBuild.substituteFrom ConfigMap flux-system/elsewhere is not in the tree: add it, make it optional, or pass its variables with --substitute"},
		{"optional", "{kind: ConfigMap, name: elsewhere, optional: true}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := operatorTree(map[string]string{"apps/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: age, namespace: flux-system}\nstringData: {key: plain}\n"})
			files["flux/cluster/ks.yaml"] = strings.Replace(files["flux/cluster/ks.yaml"], "- {kind: ConfigMap, name: cluster-settings}\n    - {kind: Secret, name: age}\n  patches:", "- "+tc.settings+"\n  patches:", 1)
			writeFiles(t, root, files)
			tree, err := Load(context.Background(), root, Options{Work: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range tree.Problems {
				got = append(got, p.Error())
			}
			if tc.want == "" && len(got) > 0 || tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
		})
	}
}
