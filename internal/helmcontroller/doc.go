// Package helmcontroller renders a Flux HelmRelease the way helm-controller v1.6 renders it: the
// chart from its source's artifact (verified against the artifact's digest, its version
// rewritten with the source revision's digest), the values from spec.values and valuesFrom
// (fluxcd/pkg/chartutil, helm-controller's own code), the post-renderers in helm-controller's
// order, and the release identity (name, target and storage namespace). It also says what
// helm-controller's next reconcile of the HelmRelease will do: upgrade, correct drift, or
// nothing. Both `diff helmrelease` and `owners --deep` render through it.
//
// Values that come from Secrets go only into the chart: no error of this package quotes a
// value.
package helmcontroller
