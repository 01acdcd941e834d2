// Command registry is distribution's registry, the `registry serve CONFIG` of
// github.com/distribution/distribution/v3/cmd/registry, with the one storage driver the test
// environment configures (inmemory: scripts/testenv/ctl writes its registry.yml) and no auth.
// Its own main links every driver (Azure, GCS, S3 and CloudFront with their SDKs): twice the
// packages to compile on a new machine, none of them used here.
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	// The registry's commands exit non-zero themselves on failure.
	registry.RootCmd.Execute() //nolint:errcheck
}
