// Package compare compares what a chart states with what the cluster holds, field by field:
// pure functions on objects, no I/O. Lists are matched by their merge keys from kyaml's
// OpenAPI data (containers by name, env by name, ports by containerPort and protocol), never
// by index where a key exists. It never returns a Secret's values: divergences under a
// Secret's data carry no values at all.
//
// This is the comparator of `helm drift diff` and `diff helmrelease` (internal/diff measures
// with it): reading the cluster (internal/live), making the two sides comparable
// (internal/normalize: API-server defaults, allocated fields, the dry-run) and printing
// (internal/output) are other packages' jobs.
package compare
