// Package defaulting reproduces offline what the API server does to an object it is asked to
// write, with the API server's own code rather than a list of remembered values:
//
//   - a built-in kind is decoded into its typed Go struct for its version (k8s.io/api, as the
//     API server decodes a request body: what the struct cannot hold, nulls and empty or zero
//     omitempty fields are gone), defaulted by the scheme of k8s.io/kubernetes
//     (pkg/apis/*/v1 SetDefaults_*), converted to the internal version and back (the
//     conversions fill fields from others: a pod's deprecated serviceAccount, a Secret's
//     stringData merged into data), and encoded again;
//   - a custom resource goes through its CRD's structural schema as the apiextensions
//     apiserver does on a create: unknown fields pruned (unless
//     x-kubernetes-preserve-unknown-fields), nulls of non-nullable fields without a default
//     dropped, then the schema's defaults applied.
//
// Defaulting code behind feature gates follows the gates of the cluster's minor version where
// the Kubernetes libraries can emulate it (Emulate). What this package cannot reproduce is
// what the API server allocates (cluster IPs, node ports, IP families, a Job's selector) and
// what admission plugins add: those are the drift package's business.
//
// It never returns an error that quotes a Secret's content.
package defaulting
