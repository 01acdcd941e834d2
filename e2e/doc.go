// Package e2e holds helm-drift's end-to-end tests: they run the real helm v3 and v4 CLIs
// (built from the Go module proxy by scripts/tools.sh into a cache outside the repository),
// install helm-drift as a Helm plugin from a copy of this source, and render the charts under
// testdata/charts through it. They are skipped under -short.
package e2e
