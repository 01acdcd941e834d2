// Command kube-apiserver is the real Kubernetes API server with etcd embedded in the same
// process, for helm-drift's tests and demo. It starts etcd on the loopback ports given by
// TESTENV_ETCD_CLIENT_PORT and TESTENV_ETCD_PEER_PORT with its data in TESTENV_ETCD_DIR, waits
// until etcd serves, then runs kube-apiserver with the command line it was given.
package main

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	dir, client, peer := os.Getenv("TESTENV_ETCD_DIR"), os.Getenv("TESTENV_ETCD_CLIENT_PORT"), os.Getenv("TESTENV_ETCD_PEER_PORT")
	if dir == "" || client == "" || peer == "" {
		fmt.Fprintln(os.Stderr, "kube-apiserver (testenv): set TESTENV_ETCD_DIR, TESTENV_ETCD_CLIENT_PORT and TESTENV_ETCD_PEER_PORT")
		os.Exit(2)
	}
	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = dir
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + client}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + peer}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver (testenv): start etcd: %v\n", err)
		os.Exit(1)
	}
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "kube-apiserver (testenv): etcd not ready after 60s")
		os.Exit(1)
	}
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
