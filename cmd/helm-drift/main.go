// Command helm-drift is the helm-drift Helm plugin and post-renderer.
package main

import (
	"os"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/helm-drift/helm-drift/internal/cli"
)

func main() {
	// client-go logs through klog what it also returns as an error ("Couldn't get current
	// server API group list" when a cluster goes away): helm-drift says it once, in its own
	// words, naming the cluster and object.
	klog.SetLogger(logr.Discard())
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
