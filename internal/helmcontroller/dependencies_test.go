package helmcontroller

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
)

// TestAddDependencies: a chart directory of a source gets the dependencies its charts/ lacks,
// as source-controller's dependency manager adds them: a file:// one from the source, a remote
// one from its repository (here a mirror of it), an alias renaming it, the lock's versions over
// Chart.yaml's; a dependency it cannot find, or whose version the constraint refuses, fails,
// named.
func TestAddDependencies(t *testing.T) {
	lib := "apiVersion: v2\nname: lib\nversion: 1.2.0\n"
	web := "apiVersion: v2\nname: web\nversion: 2.0.0\n"
	for name, tc := range map[string]struct {
		chartYAML, lock string
		want            []string // the dependencies' names and versions
		err             string
	}{
		"local and remote, aliased": {
			chartYAML: "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n" +
				"- {name: lib, version: '^1.0.0', repository: 'file://../lib'}\n" +
				"- {name: web, version: '2.x', repository: 'https://charts.example.com/stable', alias: frontend}\n",
			want: []string{"frontend 2.0.0", "lib 1.2.0"},
		},
		"vendored is not fetched again": {
			chartYAML: "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: vendored, version: 1.0.0, repository: 'https://nowhere.example.com'}\n",
			want:      []string{"vendored 1.0.0"},
		},
		"the lock's": {
			chartYAML: "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: web, version: '>=1.0.0', repository: 'https://charts.example.com/stable'}\n",
			lock:      "dependencies:\n- {name: web, version: 3.0.0, repository: 'https://charts.example.com/stable'}\ndigest: sha256:0\ngenerated: '2026-01-01T00:00:00Z'\n",
			err:       "holds web 2.0.0, not a version matching 3.0.0",
		},
		"not there": {
			chartYAML: "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: lib, version: 1.0.0, repository: 'file://../missing'}\n",
			err:       "dependency lib: no chart found at '/charts/missing'",
		},
		"refused by the constraint": {
			chartYAML: "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: lib, version: '~1.0.0', repository: 'file://../lib'}\n",
			err:       "dependency lib: can't get a valid version for constraint '~1.0.0'",
		},
	} {
		t.Run(name, func(t *testing.T) {
			source := t.TempDir()
			files := map[string]string{
				"charts/app/Chart.yaml":                 tc.chartYAML,
				"charts/app/templates/cm.yaml":          "kind: ConfigMap\n",
				"charts/app/charts/vendored/Chart.yaml": "apiVersion: v2\nname: vendored\nversion: 1.0.0\n",
				"charts/lib/Chart.yaml":                 lib,
			}
			if !strings.Contains(tc.chartYAML, "vendored") {
				delete(files, "charts/app/charts/vendored/Chart.yaml")
			}
			if tc.lock != "" {
				files["charts/app/Chart.lock"] = tc.lock
			}
			writeFiles(t, source, files)
			mirror := t.TempDir()
			writeFiles(t, mirror, map[string]string{"web/Chart.yaml": web})
			ch, err := loader4.Load(filepath.Join(source, "charts", "app"))
			if err != nil {
				t.Fatal(err)
			}
			o := ChartOptions{Mirrors: []Mirror{{From: "https://charts.example.com/stable", To: mirror}}}
			err = o.addDependencies(context.Background(), ch, source, "/charts/app")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ch.Dependencies() {
				got = append(got, d.Name()+" "+d.Metadata.Version)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("dependencies %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLoadChartHelmChartSpec: with FromSpec, a spec.chartRef to a HelmChart with no artifact
// yet (a tree's) reads the chart its spec asks for, as a spec.chart: here from the
// repository's GitRepository, its dependencies added.
func TestLoadChartHelmChartSpec(t *testing.T) {
	source := t.TempDir()
	writeFiles(t, source, map[string]string{
		"charts/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: lib, version: 1.x, repository: 'file://../lib'}\n",
		"charts/lib/Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.2.0\n",
	})
	get := &StreamFirst{NoCluster: "not in the test's objects"}
	get.Add("source.toolkit.fluxcd.io", "HelmChart", "charts", "shared", func() (map[string]any, error) {
		return map[string]any{"spec": map[string]any{"chart": "./charts/app", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}}}, nil
	})
	var asked string
	o := ChartOptions{Get: get, FromSpec: true, GitRepository: func(ns, name string) (string, string, error) {
		asked = ns + "/" + name
		return source, "0123456789abcdef", nil
	}}
	hr, err := Decode(map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "byref", "namespace": "apps"},
		"spec":     map[string]any{"interval": "1h", "chartRef": map[string]any{"kind": "HelmChart", "name": "shared", "namespace": "charts"}}})
	if err != nil {
		t.Fatal(err)
	}
	ch, _, err := LoadChart(context.Background(), hr, o)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "app" || len(ch.Dependencies()) != 1 || asked != "charts/fleet" {
		t.Errorf("chart %s with %d dependencies, GitRepository %s asked; want app with lib, from charts/fleet", ch.Name(), len(ch.Dependencies()), asked)
	}
}
