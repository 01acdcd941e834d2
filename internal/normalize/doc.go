// Package normalize is the one home of every rule that makes the live object and the chart's
// comparable, so that an API-server default, an allocated field or a tool's mark is never
// taken for drift. Each rule says, in an xref, the Kubernetes (or Helm, or Flux) code it
// mirrors.
//
//   - metadata.go: what no chart states (status, the metadata the API server writes, the marks
//     Helm, Flux and kubectl add) and a Secret's write-only stringData (Object, MergeStringData).
//   - defaulting/: the API server's own write path run in this process: typed decoding,
//     defaulting and conversion by the code of k8s.io/kubernetes, CRD structural pruning and
//     defaults, and update validation (--normalize offline).
//   - writes.go: what a registry strategy or an admission plugin writes beyond that
//     (IsDefault): a new such default is one rule there, with its xref.
//   - allocated.go: what the server allocates on create (cluster IPs, node ports, a Job's
//     selector), taken from the live object (Allocated).
//   - dryrun.go: an object prepared for a server-side dry-run create under another name, and
//     its answer made comparable again (ForDryRun, Unallocate; --normalize server).
//   - values.go: leaves compared by value (numbers of any Go type, quantities: "1000m" is "1").
//
// internal/diff chooses per object between the dry-run and the offline path (its normalize.go);
// internal/compare compares what this package has made comparable.
package normalize
