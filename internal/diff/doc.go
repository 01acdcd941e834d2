// Package diff measures a release against the live cluster: it reads every object of the
// desired manifest with one LIST per kind and namespace (a GET per CRD of a chart's crds/),
// normalises the chart's side to what the API server would store (a server-side dry-run, or
// the API server's own decoding and defaulting run offline by internal/normalize/defaulting), compares
// them field by field with internal/compare, and predicts what a helm upgrade to the desired
// manifest would do to each divergence.
//
// Its files follow a measurement's steps: run.go (Run: the targets, the reads, the objects
// measured concurrently, the prune list), cluster.go (the LISTs, one per kind and namespace;
// snapshot.go shares them across the releases of a run), crds.go (the chart's crds/),
// normalize.go (the chart's side made comparable: dry-run or offline defaulting), object.go
// (one object: compared, predicted, who moved), sources.go (envFrom and shadows), predict.go
// and refusal.go (what an upgrade would do, and what the API server would refuse), suggest.go
// (--suggest-ignore), report.go and measured.go (the report's types, its stamp). It prints
// nothing: internal/output holds every format.
package diff
