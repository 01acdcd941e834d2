package helmcontroller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StreamFirst is the Getter a HelmRelease of a manifest stream is rendered with: it answers
// from the stream's own objects first (a source or a values ConfigMap the stream adds or
// edits), then from Cluster. What neither holds is NotFound, which an optional valuesFrom
// skips, as helm-controller skips it.
type StreamFirst struct {
	// Cluster is asked for what the stream does not hold; nil: nothing is.
	Cluster Getter
	// NoCluster ends the NotFound message, after the object's kind and name, when Cluster is
	// nil, e.g. "is neither in the stream nor, without --cluster, looked up in the cluster";
	// empty: the API server's own NotFound.
	NoCluster string

	objects map[string]func() (map[string]any, error)
}

// Add makes an object of the stream answer Gets of group/kind namespace/name; decode gives
// its content when it is asked for.
func (s *StreamFirst) Add(group, kind, namespace, name string, decode func() (map[string]any, error)) {
	if s.objects == nil {
		s.objects = map[string]func() (map[string]any, error){}
	}
	s.objects[group+"/"+kind+"/"+namespace+"/"+name] = decode
}

// Get implements Getter.
func (s *StreamFirst) Get(ctx context.Context, group, version, kind, namespace, name string) (map[string]any, error) {
	if decode, ok := s.objects[group+"/"+kind+"/"+namespace+"/"+name]; ok {
		m, err := decode()
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s in the stream: %w", kind, namespace, name, err)
		}
		return m, nil
	}
	switch {
	case s.Cluster != nil:
		return s.Cluster.Get(ctx, group, version, kind, namespace, name)
	case s.NoCluster != "":
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("%s %s/%s %s", kind, namespace, name, s.NoCluster)}}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: strings.ToLower(kind)}, name)
}
