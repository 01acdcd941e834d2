// Package transform holds the mutating steps of `helm drift render`: each takes a split
// manifest stream, changes the documents it applies to through their parsed trees, and marks
// them changed. It never touches a document it does not change, so those come back
// byte-for-byte; it never writes output itself.
package transform

import "github.com/helm-drift/helm-drift/internal/manifest"

// Transform changes a manifest stream in place.
type Transform interface {
	Transform(s *manifest.Stream) error
}
