package transform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// FuzzDriftDetection: the transform never panics, and a stream it fails on is reported, not
// half-written.
func FuzzDriftDetection(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/*/*/input.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := manifest.Split(in)
		if err != nil {
			return
		}
		var rules []Rule
		for _, v := range []string{"*/*=enabled", "label:tier=db=warn"} {
			r, err := ParseFlagRule(v)
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, r)
		}
		if err := (&DriftDetection{Rules: rules, Namespace: "default"}).Transform(s); err != nil {
			return
		}
		if _, err := s.Bytes(); err != nil {
			return
		}
	})
}
