package pipeline

import (
	"bytes"
	"errors"
	"testing"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// dropAll is a broken transform that empties every document.
type dropAll struct{}

func (dropAll) Transform(s *manifest.Stream) error {
	for _, d := range s.Docs {
		d.Sep, d.Body = nil, nil
	}
	return nil
}

// failing is a transform that fails.
type failing struct{}

func (failing) Transform(*manifest.Stream) error { return errors.New("boom") }

func TestRun(t *testing.T) {
	in := "---\n# Source: c/t.yaml\napiVersion: v1\nkind: ConfigMap\n"
	tests := map[string]struct {
		transforms []transform.Transform
		in         string
		wantErr    error
		wantOut    string
	}{
		"no transforms: identical": {nil, in, nil, in},
		"empty input stays empty":  {nil, "", nil, ""},
		"empty output refused":     {[]transform.Transform{dropAll{}}, in, ErrEmptyOutput, ""},
		"failure: no output":       {[]transform.Transform{failing{}}, in, errors.New("boom"), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &Renderer{Transforms: tc.transforms}
			out, err := r.Run(bytes.NewBufferString(tc.in))
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != nil && (err == nil || (!errors.Is(err, tc.wantErr) && err.Error() != tc.wantErr.Error())):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			case tc.wantErr != nil && out != nil:
				t.Fatalf("returned output with an error")
			case tc.wantErr == nil && out.String() != tc.wantOut:
				t.Fatalf("output %q, want %q", out.String(), tc.wantOut)
			}
		})
	}
}
