package action

import (
	"testing"

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
