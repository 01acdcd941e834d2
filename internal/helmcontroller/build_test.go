package helmcontroller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// streamOf is a StreamFirst over the objects of a multi-document YAML file, with no cluster
// behind it, and the HelmRelease among them.
func streamOf(t *testing.T, path string) (*StreamFirst, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &StreamFirst{NoCluster: "with no cluster, not looked up"}
	var hr map[string]any
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		group, _, _ := strings.Cut(obj["apiVersion"].(string), "/")
		if !strings.Contains(obj["apiVersion"].(string), "/") {
			group = ""
		}
		md := obj["metadata"].(map[string]any)
		kind := obj["kind"].(string)
		s.Add(group, kind, md["namespace"].(string), md["name"].(string), func() (map[string]any, error) { return obj, nil })
		if kind == "HelmRelease" {
			hr = obj
		}
	}
	return s, hr
}

// TestBuildWithoutCluster: a HelmRelease, its values sources and its chart in hand, rendered
// with no kubeconfig and no cluster, gives the manifest helm-controller's render gives with
// one (e2e TestDiffHelmRelease wants the same file from diff helmrelease -o manifest against
// the test environment). A Secret's value reaches the chart, and only the chart.
func TestBuildWithoutCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-such-kubeconfig"))
	t.Setenv("HOME", t.TempDir())
	dir := filepath.Join(golden.Root(), "helmrelease", "web")
	get, obj := streamOf(t, filepath.Join(dir, "input.yaml"))
	hr, err := Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader4.Load(filepath.Join(golden.Root(), "charts", "webapp"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), hr, BuildOptions{Get: get, Chart: ch, Rerender: true})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(dir, "manifest.yaml"), b.Manifest)
	if b.Rerender != b.Manifest {
		t.Errorf("a chart with nothing random renders differently twice:\n%s", b.Rerender)
	}
	if b.Name != "web" || b.Namespace != "team-a" || b.Upgrade {
		t.Errorf("rendered as release %s/%s (upgrade %v), want an install of team-a/web", b.Namespace, b.Name, b.Upgrade)
	}

	// A missing values source is named, with its stage; no cluster is asked.
	hr.Spec.ValuesFrom[0].Name = "not-there"
	_, err = Build(context.Background(), hr, BuildOptions{Get: get, Chart: ch})
	var be *BuildError
	if !asBuildError(err, &be) || be.Stage != StageValues || !strings.Contains(err.Error(), "not-there") {
		t.Errorf("a missing valuesFrom: %v, want a values-stage error naming it", err)
	}
	// A --kube-version out of form is named.
	hr.Spec.ValuesFrom[0].Name = "webapp-values"
	if _, err := Build(context.Background(), hr, BuildOptions{Get: get, Chart: ch, KubeVersion: "one-point-three"}); err == nil || !strings.Contains(err.Error(), "--kube-version") {
		t.Errorf("a bad --kube-version: %v", err)
	}
}

func asBuildError(err error, be **BuildError) bool { return errors.As(err, be) }
