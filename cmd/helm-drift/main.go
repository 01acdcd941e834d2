// Command helm-drift is the helm-drift Helm plugin and post-renderer.
package main

import (
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/helm-drift/helm-drift/internal/cli"
)

// gcPercent is the garbage collector's target unless GOGC says otherwise: a run is short and
// allocates far more than it keeps (decoded documents, live objects, the Helm SDKs' renders),
// so the heap may grow to three times what is live before a collection, not Go's default of
// twice. On a diff upgrade of kube-prometheus-stack that cut 2.21 s of CPU to 1.97 s (median
// of 7), for a peak RSS of 250-275 MB against 220; what a run holds live is the same.
const gcPercent = 200

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	// client-go logs through klog what it also returns as an error ("Couldn't get current
	// server API group list" when a cluster goes away): helm-drift says it once, in its own
	// words, naming the cluster and object.
	klog.SetLogger(logr.Discard())
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
