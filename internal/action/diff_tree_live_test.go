package action

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

func TestLiveAt(t *testing.T) {
	live := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "x"}}}}}
	for _, c := range []struct {
		name string
		row  diff.Row
		want string
	}{
		{"the head's value", diff.Row{Pointer: "/spec/replicas", Chart: float64(3), Cluster: float64(2)}, diff.LiveHead},
		{"the base's value", diff.Row{Pointer: "/spec/replicas", Chart: float64(4), Cluster: float64(3)}, diff.LiveBase},
		{"another value", diff.Row{Pointer: "/spec/replicas", Chart: float64(4), Cluster: float64(2)}, diff.LiveOther},
		{"added by the head, absent", diff.Row{Pointer: "/spec/paused", Chart: true}, diff.LiveBase},
		{"removed by the head, absent", diff.Row{Pointer: "/spec/paused", Cluster: true}, diff.LiveHead},
		{"added by the head, another value there", diff.Row{Pointer: "/spec/template/metadata/labels/tier", Chart: "web"}, diff.LiveOther},
	} {
		if got := liveAt(live, &c.row); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSecretLive(t *testing.T) {
	side := func(text string) manifest.Object {
		objs, err := objectsOf(text)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%v %d", err, len(objs))
		}
		return objs[0]
	}
	base := side("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: one-1}\n")
	head := side("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: dHdvLTI=}\n") // two-2
	for _, c := range []struct{ live, want string }{
		{"b25lLTE=", diff.LiveBase},  // one-1: same size as the head's, told apart by value
		{"dHdvLTI=", diff.LiveHead},  // two-2
		{"b3RoZXI=", diff.LiveOther}, // other
	} {
		live := map[string]any{"data": map[string]any{"password": c.live}}
		if got := secretLive(live, head, base, "data.password"); got != c.want {
			t.Errorf("live %s: %q, want %q", c.live, got, c.want)
		}
	}
}

// TestMarkLiveAddedObject: an object the head adds is, in the cluster, absent (the base's
// state), there as the head renders it (with what the API server and Helm add), or another
// object of that name.
func TestMarkLiveAddedObject(t *testing.T) {
	head, err := objectsOf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier, labels: {app: web}}\ndata: {tier: prod}\n")
	if err != nil {
		t.Fatal(err)
	}
	there := func(tier string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "tier", "namespace": "apps",
			"uid": "1", "resourceVersion": "7", "labels": map[string]any{"app": "web", "app.kubernetes.io/managed-by": "Helm"},
			"annotations": map[string]any{"meta.helm.sh/release-name": "web"}}, "data": map[string]any{"tier": tier}}
	}
	for name, c := range map[string]struct {
		live map[string]any
		want string
	}{
		"not there yet":     {nil, diff.LiveBase},
		"there, the head's": {there("prod"), diff.LiveHead},
		"another one":       {there("dev"), diff.LiveOther},
	} {
		rep := &diff.Report{Objects: []diff.Object{{Object: "ConfigMap apps/tier", Missing: true, Rows: []diff.Row{{Path: "(whole object)"}}}}}
		markLive(context.Background(), rep, head, nil, "apps", getterOf(c.live))
		if got := rep.Objects[0].Rows[0].Live; got != c.want {
			t.Errorf("%s: %q, want %q (%s)", name, got, c.want, rep.Objects[0].Rows[0].Why)
		}
	}
}

// getterOf answers every Get with obj, or NotFound when it is nil.
type getterOf map[string]any

func (g getterOf) Get(_ context.Context, group, _, kind, _, name string) (map[string]any, error) {
	if g == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind) + "s"}, name)
	}
	return g, nil
}
