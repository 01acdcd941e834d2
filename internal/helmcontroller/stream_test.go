package helmcontroller

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

type clusterOf map[string]map[string]any

func (c clusterOf) Get(_ context.Context, group, _, kind, namespace, name string) (map[string]any, error) {
	if m, ok := c[group+"/"+kind+"/"+namespace+"/"+name]; ok {
		return m, nil
	}
	return nil, errors.New("not in the cluster either")
}

// TestStreamFirst: the stream's object wins over the cluster's; without a cluster what the
// stream lacks is NotFound, with the message asked for, so that an optional valuesFrom is
// skipped; a decode error names the object.
func TestStreamFirst(t *testing.T) {
	ctx := context.Background()
	fromStream := map[string]any{"data": map[string]any{"from": "stream"}}
	fromCluster := map[string]any{"data": map[string]any{"from": "cluster"}}
	s := &StreamFirst{Cluster: clusterOf{"/ConfigMap/apps/values": fromCluster, "/ConfigMap/apps/other": fromCluster}}
	s.Add("", "ConfigMap", "apps", "values", func() (map[string]any, error) { return fromStream, nil })
	s.Add("", "Secret", "apps", "broken", func() (map[string]any, error) { return nil, errors.New("bad YAML") })
	if m, err := s.Get(ctx, "", "v1", "ConfigMap", "apps", "values"); err != nil || m["data"].(map[string]any)["from"] != "stream" {
		t.Errorf("the stream's ConfigMap: %v, %v", m, err)
	}
	if m, err := s.Get(ctx, "", "v1", "ConfigMap", "apps", "other"); err != nil || m["data"].(map[string]any)["from"] != "cluster" {
		t.Errorf("the cluster's ConfigMap: %v, %v", m, err)
	}
	if _, err := s.Get(ctx, "", "v1", "Secret", "apps", "broken"); err == nil || !strings.Contains(err.Error(), "Secret apps/broken in the stream: bad YAML") {
		t.Errorf("a decode error: %v", err)
	}
	for _, tc := range []struct{ noCluster, want string }{
		{"", `configmap "gone" not found`},
		{"is neither in the stream nor, without --cluster, looked up in the cluster", "ConfigMap apps/gone is neither in the stream nor, without --cluster, looked up in the cluster"},
	} {
		offline := &StreamFirst{NoCluster: tc.noCluster}
		_, err := offline.Get(ctx, "", "v1", "ConfigMap", "apps", "gone")
		if !apierrors.IsNotFound(err) || err.Error() != tc.want {
			t.Errorf("NoCluster %q: %v, want NotFound %q", tc.noCluster, err, tc.want)
		}
	}
}
