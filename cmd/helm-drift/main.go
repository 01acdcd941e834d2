// Command helm-drift is the helm-drift Helm plugin and post-renderer.
package main

import (
	"os"

	"github.com/helm-drift/helm-drift/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
