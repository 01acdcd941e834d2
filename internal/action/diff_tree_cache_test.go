package action

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// TestDiffTreeBuildCache: a preview read with the build cache, cold (every file built and
// kept) and warm (every file from the cache), says what it says without the cache, word for
// word; the Kustomizations of plain files are then built file by file.
func TestDiffTreeBuildCache(t *testing.T) {
	files := func(replicas string, extra bool) map[string]string {
		hr := func(name, values string) string {
			return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + ", namespace: apps}\n" +
				"spec:\n  interval: 1h\n  chart:\n    spec: {chart: ./chart, sourceRef: {kind: GitRepository, name: fleet, namespace: apps}}\n  values: " + values + "\n"
		}
		f := map[string]string{
			"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {replicas: {{ .Values.replicas | quote }}}\n",
			"clusters/a/flux.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: fleet, namespace: apps}\nspec: {url: https://git.example.com/fleet.git, interval: 1h, ref: {branch: main}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: fleet, namespace: apps}\nspec: {interval: 1h, path: ./clusters/a, prune: true, sourceRef: {kind: GitRepository, name: fleet}}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: apps}\nspec: {interval: 1h, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: fleet}, postBuild: {substitute: {four: '4'}}}\n",
			"apps/a.yaml":       hr("a", "{replicas: "+replicas+"}"),
			"apps/b.yaml":       hr("b", "{replicas: 1.5}"),
			"apps/sub/c.yaml":   hr("c", "{replicas: 3}") + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
			"apps/notes.txt":    "not a manifest\n",
			"apps/values-x.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: apps}\ndata: {values.yaml: 'replicas: ${four}'}\n",
		}
		if extra {
			f["apps/d.yaml"] = hr("d", "{replicas: 5}")
		}
		return f
	}
	base, head := writeDir(t, files("1", false)), writeDir(t, files(`"${four}"`, true))
	cache := t.TempDir()
	run := func(cache string) string {
		t.Helper()
		d := &DiffTree{Repo: head, Base: base, Head: head, KubeVersion: "v1.34.2", Cache: cache,
			Tree: fluxtree.Options{Sources: []string{"apps/fleet"}}}
		res, err := d.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The sides are named by their directories, the same in each run; each row's
		// objects with it.
		data, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			if r.Report != nil {
				objs, err := json.Marshal(r.Report.Objects)
				if err != nil {
					t.Fatal(err)
				}
				data = append(append(data, '\n'), objs...)
			}
		}
		return string(data)
	}
	want := run("")
	for _, hr := range []string{"apps/a", "apps/d"} {
		if !strings.Contains(want, `"`+hr+`"`) {
			t.Fatalf("without the cache: no row for %s\n%s", hr, want)
		}
	}
	if !strings.Contains(want, `"path":"data.replicas","pointer":"/data/replicas","chart":"4"`) {
		t.Fatalf("without the cache: the head's variable is not substituted in apps/a's values\n%s", want)
	}
	if cold := run(cache); cold != want {
		t.Errorf("cold cache:\n%s\nwant\n%s", cold, want)
	}
	var entries int
	filepath.WalkDir(filepath.Join(cache, "files"), func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			entries++
		}
		return nil
	})
	if entries < 6 { // the files of both sides' two Kustomizations, each content once
		t.Errorf("%d file builds kept, want those of both sides' files", entries)
	}
	if warm := run(cache); warm != want {
		t.Errorf("warm cache:\n%s\nwant\n%s", warm, want)
	}
}
