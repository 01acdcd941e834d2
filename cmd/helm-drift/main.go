// Command helm-drift is the helm-drift Helm plugin and post-renderer.
//
// HELM_DRIFT_CPUPROFILE=FILE writes a CPU profile of the run to FILE, for "go tool pprof"
// (docs/development.md).
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/helm-drift/helm-drift/internal/cli"
)

func main() {
	// client-go logs through klog what it also returns as an error ("Couldn't get current
	// server API group list" when a cluster goes away): helm-drift says it once, in its own
	// words, naming the cluster and object.
	klog.SetLogger(logr.Discard())
	stop := profile(os.Getenv("HELM_DRIFT_CPUPROFILE"))
	code := cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// profile starts a CPU profile written to path, when path is set, and returns what stops it.
func profile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "helm-drift: HELM_DRIFT_CPUPROFILE: %v (the run goes on without a profile)\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
