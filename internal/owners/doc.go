// Package owners is the second-owner check: it finds objects that two owners would write —
// two documents of one stream with one identity, two HelmReleases writing one Helm release,
// a live object another release or HelmRelease owns, one object rendered by the charts of two
// HelmReleases. It reads; it never changes a stream or the cluster. It returns findings, and
// the command decides what they mean for the exit code.
package owners
