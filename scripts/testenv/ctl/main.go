// Command testenv-ctl starts and stops helm-drift's test environment: a real kube-apiserver
// (etcd embedded) on a free loopback port with token auth and RBAC, the Flux CRDs,
// source-controller, helm-controller, kustomize-controller and notification-controller against it, and an in-memory
// OCI registry, all on loopback. It uses only the standard library so that it builds in seconds.
//
//	testenv-ctl up   -dir DIR -bin CACHE   start everything; write DIR/env, DIR/kubeconfig, DIR/pids
//	testenv-ctl down -dir DIR              stop exactly the processes up started, by pid
//	testenv-ctl logs -dir DIR              print every log under DIR/logs
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "the environment's directory (state, logs, kubeconfig)")
	bin := fs.String("bin", "", "the directory scripts/testenv/build.sh printed (binaries and CRDs)")
	fs.Parse(os.Args[2:])
	if *dir == "" {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		if *bin == "" {
			usage()
		}
		err = up(*dir, *bin)
	case "down":
		err = down(*dir)
	case "logs":
		err = printLogs(*dir, os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testenv-ctl up -dir DIR -bin CACHE | down -dir DIR | logs -dir DIR")
	os.Exit(2)
}
