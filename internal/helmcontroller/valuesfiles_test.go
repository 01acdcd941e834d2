package helmcontroller

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	sigsyaml "sigs.k8s.io/yaml"
)

// writeFiles writes name: content files under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestValuesFiles: spec.chart.spec.valuesFiles as source-controller merges them into the
// HelmChart's artifact. From a HelmRepository the files are the chart's own (values.yaml its
// defaults); from this repository, paths in it. Merged in order, maps key by key; the chart's
// defaults are kept only when values.yaml is listed; a missing file fails unless ignored.
func TestValuesFiles(t *testing.T) {
	chartFiles := map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"values.yaml":      "replicas: 2\nimage: {repository: nginx, tag: \"1.0\"}\n",
		"values-prod.yaml": "replicas: 5\nimage: {tag: \"2.0\"}\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n" +
			"data: {replicas: \"{{ .Values.replicas }}\"}\n",
	}
	repoFiles := map[string]string{
		"clusters/prod/values.yaml": "replicas: 7\nextra: {enabled: true}\n",
		"values.yaml":               "replicas: 9\n",
	}
	defaults := map[string]any{"replicas": float64(2), "image": map[string]any{"repository": "nginx", "tag": "1.0"}}
	for name, tc := range map[string]struct {
		files   []string
		ignore  bool
		fromGit bool
		want    map[string]any
		err     string
	}{
		"none":                      {want: defaults},
		"values.yaml alone":         {files: []string{"values.yaml"}, want: defaults},
		"defaults then prod":        {files: []string{"values.yaml", "values-prod.yaml"}, want: map[string]any{"replicas": float64(5), "image": map[string]any{"repository": "nginx", "tag": "2.0"}}},
		"prod alone drops defaults": {files: []string{"values-prod.yaml"}, want: map[string]any{"replicas": float64(5), "image": map[string]any{"tag": "2.0"}}},
		"prod then defaults":        {files: []string{"./values-prod.yaml", "values.yaml"}, want: map[string]any{"replicas": float64(2), "image": map[string]any{"repository": "nginx", "tag": "1.0"}}},
		"missing":                   {files: []string{"values.yaml", "values-qa.yaml"}, err: "no values file found at path 'values-qa.yaml' in chart app"},
		"missing ignored":           {files: []string{"values.yaml", "values-qa.yaml"}, ignore: true, want: defaults},
		"all missing ignored":       {files: []string{"values-qa.yaml", "values-dev.yaml"}, ignore: true, want: map[string]any{}},
		"git: paths in the source":  {files: []string{"values.yaml", "clusters/prod/values.yaml"}, fromGit: true, want: map[string]any{"replicas": float64(7), "extra": map[string]any{"enabled": true}}},
		"git: no way out":           {files: []string{"../../etc/passwd"}, fromGit: true, err: "no values file found at path '/etc/passwd' (reference '../../etc/passwd') in the source"},
		"git: the chart's are not":  {files: []string{"values-prod.yaml"}, fromGit: true, err: "no values file found at path '/values-prod.yaml'"},
		"git: missing ignored":      {files: []string{"values-prod.yaml", "values.yaml"}, fromGit: true, ignore: true, want: map[string]any{"replicas": float64(9)}},
	} {
		t.Run(name, func(t *testing.T) {
			repo := t.TempDir()
			writeFiles(t, repo, repoFiles)
			writeFiles(t, filepath.Join(repo, "charts", "app"), chartFiles)
			sourceDir := ""
			if tc.fromGit {
				sourceDir = repo
			}
			// The version's build metadata: the source's revision with reconcileStrategy
			// Revision (meta), then the HelmChart's generation once files are merged.
			var ch *chartv2.Chart
			for _, meta := range []string{"", "0123456789ab"} {
				var err error
				if ch, err = loader4.Load(filepath.Join(repo, "charts", "app")); err != nil {
					t.Fatal(err)
				}
				err = applyValuesFiles(ch, v2.HelmChartTemplateSpec{ValuesFiles: tc.files, IgnoreMissingValuesFiles: tc.ignore}, sourceDir, meta, 3)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want one containing %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				wantVersion := map[string]string{"": "1.0.0+3", "0123456789ab": "1.0.0+0123456789ab.3"}[meta]
				if len(tc.files) == 0 || len(tc.files) == 1 && tc.files[0] == "values.yaml" {
					wantVersion = map[string]string{"": "1.0.0", "0123456789ab": "1.0.0+0123456789ab"}[meta]
				}
				if ch.Metadata.Version != wantVersion {
					t.Errorf("meta %q: chart version %s, want %s", meta, ch.Metadata.Version, wantVersion)
				}
			}
			if !reflect.DeepEqual(map[string]any(ch.Values), tc.want) {
				t.Errorf("values %v, want %v", ch.Values, tc.want)
			}
			// values.yaml in the chart says the same: what helm-controller loads from the package.
			for _, f := range ch.Raw {
				if f.Name == "values.yaml" {
					var got map[string]any
					if err := sigsyaml.Unmarshal(f.Data, &got); err != nil {
						t.Fatal(err)
					}
					if got == nil {
						got = map[string]any{}
					}
					if !reflect.DeepEqual(got, tc.want) {
						t.Errorf("values.yaml %s, want %v", f.Data, tc.want)
					}
				}
			}
		})
	}
}

// TestSameChartValuesFiles: the HelmChart helm-controller made is the template's only while it
// merges the same values files the same way; else its artifact is not what the next reconcile
// renders, and the chart is read from the repository.
func TestSameChartValuesFiles(t *testing.T) {
	tpl := &v2.HelmChartTemplate{Spec: v2.HelmChartTemplateSpec{Chart: "app", Version: "1.0.0",
		SourceRef: v2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"}, ValuesFiles: []string{"values.yaml", "values-prod.yaml"}}}
	helmChart := func(files []any, ignore bool) map[string]any {
		spec := map[string]any{"chart": "app", "version": "1.0.0", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}
		if files != nil {
			spec["valuesFiles"] = files
		}
		if ignore {
			spec["ignoreMissingValuesFiles"] = true
		}
		return map[string]any{"spec": spec}
	}
	for name, tc := range map[string]struct {
		obj  map[string]any
		want bool
	}{
		"the same":             {helmChart([]any{"values.yaml", "values-prod.yaml"}, false), true},
		"none":                 {helmChart(nil, false), false},
		"another order":        {helmChart([]any{"values-prod.yaml", "values.yaml"}, false), false},
		"one less":             {helmChart([]any{"values.yaml"}, false), false},
		"missing ones ignored": {helmChart([]any{"values.yaml", "values-prod.yaml"}, true), false},
	} {
		if got := sameChart(tc.obj, tpl); got != tc.want {
			t.Errorf("%s: sameChart %v, want %v", name, got, tc.want)
		}
	}
}
