package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X github.com/helm-drift/helm-drift/internal/cli.version=...".
var (
	version = ""
	commit  = ""
)

// versionInfo is what `helm-drift version` prints.
type versionInfo struct {
	Version, Commit, Go, HelmSDK string
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version(), HelmSDK: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && v.Commit == "" {
				v.Commit = s.Value
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "helm.sh/helm/v3" {
				v.HelmSDK = d.Version
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func runVersion(args []string, in io.Reader, out, errOut io.Writer) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		fmt.Fprintf(errOut, "helm-drift version: takes no arguments\n")
		return ExitError
	}
	v := currentVersion()
	fmt.Fprintf(out, "helm-drift %s\ncommit:   %s\ngo:       %s\nhelm sdk: %s\n", v.Version, v.Commit, v.Go, v.HelmSDK)
	return ExitOK
}
