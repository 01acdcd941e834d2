package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/cli/values"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/testenv"
)

// The upgrade's render takes the cluster as an option: with none (no configuration, the
// kubeconfig a file that does not exist), the install of a chart renders as the real helm
// template of the same Helm renders it, with the same Kubernetes version and values, for a
// chart of ours and every chart of the corpus, each SDK against its own CLI. A chart whose two
// helm templates differ (random values) is compared by its objects' identities. (The API
// versions offered differ where a chart asks for one that Kubernetes v1.34 no longer serves
// and helm template's fixed set holds, or for a built-in one by kind: kubeapis, and
// TestDiffTreePredictsHelmController against helm-controller; no chart here asks so.)
func TestRenderUpgradeWithoutCluster(t *testing.T) {
	t.Parallel() // reads no cluster
	type chart struct {
		path, release, namespace string
		args                     []string
	}
	charts := []chart{{path: filepath.Join(repoRoot, "testdata/charts/webapp"), release: "web", namespace: "apps"}}
	if dir, corpus, ok := testenv.Corpus(t); ok {
		for _, c := range corpus {
			charts = append(charts, chart{filepath.Join(dir, c.Path), c.Release, c.Namespace, c.Args})
		}
	} else {
		t.Log("../shared/corpus is absent: testdata's chart only")
	}
	const kubeVersion = "v1.34.2"
	for _, engine := range []string{"helm3", "helm4"} {
		h := newHelm(t, engine)
		for _, c := range charts {
			name := engine + "/" + filepath.Base(c.path)
			var vals values.Options
			for i := 0; i < len(c.args); i += 2 {
				if i+1 >= len(c.args) || c.args[i] != "--set" {
					t.Fatalf("%s: args %v: only --set KEY=VALUE pairs are read here", name, c.args)
				}
				vals.Values = append(vals.Values, c.args[i+1])
			}
			r, err := (*action.Configuration)(nil).RenderUpgrade(context.Background(), engine, action.UpgradeSpec{
				Release: c.release, Namespace: c.namespace, Chart: c.path, Install: true, Values: vals,
				KubeVersion: kubeVersion, Kubeconfig: filepath.Join(t.TempDir(), "none")})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			args := append([]string{"template", c.release, c.path, "-n", c.namespace, "--kube-version", kubeVersion, "--no-hooks"}, c.args...)
			want, _ := h.run(t, false, nil, args...)
			if strings.TrimSpace(r.Manifest) == strings.TrimSpace(want) {
				continue
			}
			again, _ := h.run(t, false, nil, args...)
			if strings.TrimSpace(again) != strings.TrimSpace(want) {
				// Random values: helm template differs from itself.
				if got, w := identities(t, r.Manifest), identities(t, want); got != w {
					t.Errorf("%s: objects\n%s\nhelm template's\n%s", name, got, w)
				}
				t.Logf("%s: helm template renders differently each time: compared by objects", name)
				continue
			}
			t.Errorf("%s: the render without a cluster differs from %s template:\n--- ours\n%s\n--- helm template\n%s", name, engine, r.Manifest, want)
		}
	}
}

// identities lists a manifest's objects, one "apiVersion kind namespace/name" a line, in order.
func identities(t *testing.T, m string) string {
	t.Helper()
	var b strings.Builder
	for _, o := range manifestObjects(t, m) {
		fmt.Fprintf(&b, "%s %s %s/%s\n", o.APIVersion, o.Kind, o.Namespace, o.Name)
	}
	return b.String()
}
