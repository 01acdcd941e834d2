// Package bench measures `helm drift render` side by side with what a user would otherwise
// pick: a kyaml parse-and-write of the whole stream (what a naive post-renderer does), and
// `kustomize build` applying the same patch (kustomize built from the Go module proxy by
// scripts/tools.sh). `make bench` prints the figures and the ratios in one run.
package bench
