// Package pipeline runs helm-drift's transforms over a rendered manifest stream, all or
// nothing: it returns either the whole transformed stream or an error, never half a stream and
// never an empty stream for a non-empty input. It implements Helm's PostRenderer interface, so
// the same code serves `helm drift render` and in-process renders.
package pipeline

import (
	"bytes"
	"errors"
	"fmt"

	helmpostrender "helm.sh/helm/v3/pkg/postrender"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// Renderer applies its transforms, in order, to a manifest stream, then its checks.
type Renderer struct {
	Transforms []transform.Transform
	// Checks read the transformed stream; an error from one fails the render.
	Checks []func(*manifest.Stream) error
}

var _ helmpostrender.PostRenderer = (*Renderer)(nil)

// ErrEmptyOutput guards the one failure Helm 3 would not catch: an upgrade whose post-renderer
// printed nothing deletes every object of the release.
var ErrEmptyOutput = errors.New("the transformed stream is empty although the input was not; refusing to hand Helm an empty manifest")

// Run transforms the stream in manifests and returns the result.
func (r *Renderer) Run(manifests *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := r.Render(manifests.Bytes())
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// Render transforms one stream. Documents no transform changes come back byte-for-byte.
func (r *Renderer) Render(in []byte) ([]byte, error) {
	s, err := manifest.Split(in)
	if err != nil {
		return nil, err
	}
	for _, t := range r.Transforms {
		if err := t.Transform(s); err != nil {
			return nil, err
		}
	}
	// The checks only read the transformed stream, and so does writing it out: they run side
	// by side (the transforms are done; nothing writes to the stream any more).
	checked := make(chan error, 1)
	go func() {
		for _, check := range r.Checks {
			if err := check(s); err != nil {
				checked <- err
				return
			}
		}
		checked <- nil
	}()
	out, err := s.Bytes()
	if checkErr := <-checked; checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(out)) == 0 && len(bytes.TrimSpace(in)) != 0 {
		return nil, fmt.Errorf("%w", ErrEmptyOutput)
	}
	return out, nil
}
