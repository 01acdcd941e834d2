package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// movedReport is the part of diff's JSON the who-moved test reads.
type movedReport struct {
	Divergences int `json:"divergences"`
	Drift       int `json:"drift"`
	Changes     int `json:"changes"`
	Objects     []struct {
		Object string `json:"object"`
		Rows   []struct {
			Path            string `json:"path"`
			Chart           any    `json:"chart"`
			Cluster         any    `json:"cluster"`
			Moved           string `json:"moved"`
			RenderDependent bool   `json:"renderDependent"`
		} `json:"divergences"`
	} `json:"objects"`
}

// rows is "object|path|moved[|render-dependent]" per row.
func (r movedReport) rows() []string {
	var out []string
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			s := o.Object + "|" + d.Path + "|" + d.Moved
			if d.RenderDependent {
				s += "|render-dependent"
			}
			out = append(out, s)
		}
	}
	return out
}

// chartValue is the chart's value of the row at path.
func (r movedReport) chartValue(path string) any {
	for _, o := range r.Objects {
		for _, d := range o.Rows {
			if d.Path == path {
				return d.Chart
			}
		}
	}
	return nil
}

func movedDiff(t *testing.T, args ...string) (movedReport, string, int) {
	t.Helper()
	out, errOut, code := diffBinary(t, append(args, "-o", "json", "--kubeconfig", cluster.Kubeconfig)...)
	var rep movedReport
	if code == 0 || code == 2 {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("diff %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	return rep, out + errOut, code
}

// TestDiffUpgradeWhoMoved: a chart that reuses a generated password the way public charts do
// (quoted at install, looked up unquoted afterwards, hashed into a pod annotation), installed
// and untouched: diff upgrade with the same values shows the checksum as moved by the chart,
// render-dependent, and --exit-code-on=drift exits 0; the real helm upgrade then sets exactly
// the predicted value. A field another manager edits is moved by the cluster; a values change
// of a field another manager also edited is moved by both, and the real upgrade sets the
// chart's value. Helm 3 (client-side) and Helm 4 (server-side, --force-conflicts).
func TestDiffUpgradeWhoMoved(t *testing.T) {
	t.Parallel() // its own namespace and Helm homes
	for _, helmName := range []string{"helm3", "helm4"} {
		t.Run(helmName, func(t *testing.T) {
			h := clusterHelm(t, helmName)
			ns := cluster.Namespace(t)
			chart := filepath.Join(repoRoot, "testdata/charts/reuseapp")
			h.run(t, false, nil, "install", "app", chart, "-n", ns)
			deploy := "Deployment.apps " + ns + "/app"
			checksum := "spec.template.metadata.annotations.checksum/secret"

			rep, out, code := movedDiff(t, "upgrade", "app", chart, "-n", ns)
			if got := strings.Join(rep.rows(), "\n"); code != 2 || got != deploy+"|"+checksum+"|chart|render-dependent" || rep.Drift != 0 || rep.Changes != 1 {
				t.Fatalf("untouched, same values: exit %d, rows:\n%s\nwant exit 2 and only the checksum, moved by the chart, render-dependent (drift 0, changes 1)\n%s", code, got, out)
			}
			table, _, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--kubeconfig", cluster.Kubeconfig)
			if code != 2 || !hasRow(table, "checksum/secret", "chart") || !strings.Contains(table, "MOVED") ||
				!strings.Contains(table, "0 drift, 1 changes the upgrade brings") || !strings.Contains(table, "renders them differently each time or once its objects exist") {
				t.Errorf("table: exit %d, want the MOVED column, the render-dependence note and the split in the summary\n%s", code, table)
			}
			if _, errOut, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--exit-code-on", "drift", "--kubeconfig", cluster.Kubeconfig); code != 0 {
				t.Errorf("--exit-code-on drift with nothing drifted: exit %d, want 0\n%s", code, errOut)
			}
			predicted := rep.chartValue(checksum)

			// The real upgrade sets the predicted value: nobody drifted, the chart moved.
			upgrade := []string{"upgrade", "app", chart, "-n", ns}
			if helmName == "helm4" {
				upgrade = append(upgrade, "--force-conflicts")
			}
			h.run(t, false, nil, upgrade...)
			if got := liveDeployment(t, ns, "spec", "template", "metadata", "annotations", "checksum/secret"); got != predicted {
				t.Errorf("after the real upgrade the checksum is %v; diff predicted %v", got, predicted)
			}

			// Another field manager edits the replicas: the cluster moved.
			patchDeployment(t, ns, `{"spec":{"replicas":3}}`)
			rep, out, code = movedDiff(t, "upgrade", "app", chart, "-n", ns)
			if got := strings.Join(rep.rows(), "\n"); got != deploy+"|spec.replicas|cluster" || rep.Drift != 1 || rep.Changes != 0 {
				t.Errorf("replicas edited by another manager: rows:\n%s\nwant spec.replicas moved by the cluster (drift 1)\n%s", got, out)
			}
			if _, _, code := diffBinary(t, "upgrade", "app", chart, "-n", ns, "--exit-code-on", "drift", "--kubeconfig", cluster.Kubeconfig); code != 2 {
				t.Errorf("--exit-code-on drift with the replicas drifted: exit %d, want 2", code)
			}

			// A values change of the same field: both moved; the upgrade sets the chart's value.
			args := []string{"upgrade", "app", chart, "-n", ns, "--set", "replicas=5"}
			if helmName == "helm4" {
				args = append(args, "--force-conflicts")
			}
			rep, out, _ = movedDiff(t, args...)
			if got := strings.Join(rep.rows(), "\n"); got != deploy+"|spec.replicas|both" || rep.Drift != 1 {
				t.Errorf("replicas edited and changed by the values: rows:\n%s\nwant spec.replicas moved by both\n%s", got, out)
			}
			h.run(t, false, nil, append(upgrade, "--set", "replicas=5")...)
			if got := liveDeployment(t, ns, "spec", "replicas"); got != int64(5) {
				t.Errorf("after the real upgrade replicas is %v, want the chart's 5", got)
			}
		})
	}
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// liveDeployment reads a field of Deployment app.
func liveDeployment(t *testing.T, ns string, path ...string) any {
	t.Helper()
	obj, err := cluster.Dynamic.Resource(deployments).Namespace(ns).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v any = obj.Object
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// patchDeployment merge-patches Deployment app as the field manager "someone-else".
func patchDeployment(t *testing.T, ns, patch string) {
	t.Helper()
	if _, err := cluster.Dynamic.Resource(deployments).Namespace(ns).Patch(context.Background(), "app", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
}
