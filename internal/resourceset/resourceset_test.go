package resourceset

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestBuild: each ResourceSet of testdata/resourceset built as the operator builds it, against
// its golden objects (rewrite them with go test ./internal/resourceset -update; they were
// checked against flux-operator v0.59.0's own offline build, flux-operator build resourceset).
func TestBuild(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(golden.Root(), "resourceset", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var rs map[string]any
			if err := yaml.Unmarshal(data, &rs); err != nil {
				t.Fatal(err)
			}
			objs, err := Build(rs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, o := range objs {
				y, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString("---\n" + string(y))
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".golden", b.String())
		})
	}
}

// TestBuildRefused: what the operator refuses, and what only the cluster answers.
func TestBuildRefused(t *testing.T) {
	obj := func(meta, spec string) map[string]any {
		var rs map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata: {name: rs, namespace: apps"+meta+"}\nspec:\n"+spec), &rs); err != nil {
			t.Fatal(err)
		}
		return rs
	}
	cm := "{apiVersion: v1, kind: ConfigMap, metadata: {name: '<< inputs.name >>', namespace: apps}}"
	for _, tc := range []struct {
		name, meta, spec, want string
		unexpanded             bool
	}{
		{"inputs from providers", "", "  inputsFrom: [{kind: ResourceSetInputProvider, name: prs}]\n  resources: [" + cm + "]", "only the cluster answers", true},
		{"reconcile disabled", ", annotations: {fluxcd.controlplane.io/reconcile: disabled}", "  inputs: [{name: a}]\n  resources: [" + cm + "]", "reconciliation is disabled", true},
		{"permute", "", "  inputStrategy: {name: Permute}\n  inputs: [{name: a}]\n  resources: [" + cm + "]", "Permute", true},
		{"a missing key", "", "  inputs: [{other: a}]\n  resources: [" + cm + "]", `map has no entry for key "name"`, false},
		{"steps beside resources", "", "  resources: [" + cm + "]\n  steps: [{name: a, resources: [" + cm + "]}]", "mutually exclusive", false},
		{"an empty step", "", "  steps: [{name: a}]", `step "a": at least one of resources or resourcesTemplate`, false},
		{"one object in two steps", "", "  inputs: [{name: a}]\n  steps: [{name: one, resources: [" + cm + "]}, {name: two, resources: [" + cm + "]}]", `in step "two", already defined in step "one"`, false},
		{"a null input set is an empty one", "", "  inputs: [null]\n  resources: [" + cm + "]", `map has no entry for key "name"`, false},
		{"a broken template", "", "  inputs: [{name: a}]\n  resourcesTemplate: '<< if >>'", "parse the template", false},
	} {
		_, err := Build(obj(tc.meta, tc.spec), nil)
		var u *Unexpanded
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &u) != tc.unexpanded {
			t.Errorf("%s: %v, want %q (unexpanded %v)", tc.name, err, tc.want, tc.unexpanded)
		}
	}
}

// TestBuildMatchesOperator: each case of testdata/resourceset built here is what the Flux
// Operator's own offline build prints (flux-operator build resourceset, the builder its
// ResourceSet controller runs), but for the comment lines that name its steps. It needs the
// operator's CLI (scripts/tools.sh flux-operator, Go 1.27), named by HELM_DRIFT_FLUX_OPERATOR.
func TestBuildMatchesOperator(t *testing.T) {
	cli := os.Getenv("HELM_DRIFT_FLUX_OPERATOR")
	if cli == "" {
		t.Skip("HELM_DRIFT_FLUX_OPERATOR is unset: build the Flux Operator's CLI with scripts/tools.sh flux-operator and name it there")
	}
	files, _ := filepath.Glob(filepath.Join(golden.Root(), "resourceset", "*.yaml"))
	for _, f := range files {
		out, err := exec.Command(cli, "build", "resourceset", "-f", f).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", cli, f, err, out)
		}
		var kept []string
		for _, l := range strings.SplitAfter(string(out), "\n") {
			if !strings.HasPrefix(l, "# step: ") {
				kept = append(kept, l)
			}
		}
		want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(kept, ""); got != string(want) {
			t.Errorf("%s: the operator builds\n%s\nthe golden file holds\n%s", filepath.Base(f), got, want)
		}
	}
}

// TestBuildProviders: inputs from ResourceSetInputProviders, read from the cluster (their
// status.exportedInputs): after the inline ones, each provider's in the order of their names,
// each input set with its provider's reference; none from its providers, no objects; a
// selector, or a provider the cluster does not answer, is not built.
func TestBuildProviders(t *testing.T) {
	var rs map[string]any
	if err := yaml.Unmarshal([]byte(`apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: previews, namespace: apps}
spec:
  inputs: [{id: "0", branch: main}]
  inputsFrom:
    - {kind: ResourceSetInputProvider, name: prs}
    - {apiVersion: fluxcd.controlplane.io/v1, kind: ResourceSetInputProvider, name: branches}
    - {name: prs}
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: 'preview-<< inputs.id >>', namespace: apps}
      data: {branch: '<< inputs.branch >>', from: '<< inputs.provider.kind >>/<< inputs.provider.namespace >>/<< inputs.provider.name >>'}
`), &rs); err != nil {
		t.Fatal(err)
	}
	exported := map[string][]map[string]any{
		"prs":      {{"id": "12", "branch": "fix-a"}, {"id": "15", "branch": "feat-b"}},
		"branches": {{"id": "7", "branch": "release"}},
	}
	var asked []string
	providers := &Providers{Inputs: func(namespace, name string) ([]map[string]any, error) {
		asked = append(asked, namespace+"/"+name)
		sets, ok := exported[name]
		if !ok {
			return nil, errors.New("not found")
		}
		return sets, nil
	}}
	objs, err := Build(rs, providers)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		data, _ := o["data"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %s", meta["name"], data["branch"], data["from"]))
	}
	want := []string{
		"preview-0 main ResourceSet/apps/previews",
		"preview-7 release ResourceSetInputProvider/apps/branches",
		"preview-12 fix-a ResourceSetInputProvider/apps/prs",
		"preview-15 feat-b ResourceSetInputProvider/apps/prs",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || strings.Join(asked, ",") != "apps/branches,apps/prs" {
		t.Errorf("objects\n  %s\nwant\n  %s\n(providers asked: %v)", strings.Join(got, "\n  "), strings.Join(want, "\n  "), asked)
	}

	spec := rs["spec"].(map[string]any)
	delete(spec, "inputs")
	exported["prs"], exported["branches"] = nil, nil
	if objs, err := Build(rs, providers); err != nil || len(objs) != 0 {
		t.Errorf("no input sets from its providers: %d objects, %v; want none", len(objs), err)
	}
	spec["inputsFrom"] = []any{map[string]any{"name": "gone"}}
	var u *Unexpanded
	if _, err := Build(rs, providers); !errors.As(err, &u) || !strings.Contains(err.Error(), "ResourceSetInputProvider apps/gone: not found") {
		t.Errorf("a provider the cluster lacks: %v", err)
	}
	spec["inputsFrom"] = []any{map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}}
	if _, err := Build(rs, providers); !errors.As(err, &u) || !strings.Contains(err.Error(), "by label") {
		t.Errorf("a selector, the cluster not listed: %v", err)
	}
	// Selected by label where the cluster lists them: each provider once, by name.
	exported["prs"], exported["branches"] = []map[string]any{{"id": "12", "branch": "fix-a"}}, []map[string]any{{"id": "7", "branch": "release"}}
	providers.Select = func(namespace string, selector labels.Selector) ([]string, error) {
		if !selector.Matches(labels.Set{"app": "web"}) || selector.Matches(labels.Set{"app": "db"}) {
			t.Errorf("selector %s", selector)
		}
		return []string{"prs", "branches"}, nil
	}
	spec["inputsFrom"] = append(spec["inputsFrom"].([]any), map[string]any{"name": "prs"})
	asked = nil
	if objs, err := Build(rs, providers); err != nil || len(objs) != 2 || strings.Join(asked, ",") != "apps/branches,apps/prs" {
		t.Errorf("selected providers: %d objects, %v, asked %v", len(objs), err, asked)
	}
	spec["inputsFrom"] = []any{map[string]any{"kind": "ConfigMap", "name": "x"}}
	if _, err := Build(rs, providers); err == nil || errors.As(err, &u) || !strings.Contains(err.Error(), "only ResourceSetInputProvider") {
		t.Errorf("another kind: %v", err)
	}
}
