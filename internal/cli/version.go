package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at build time with -ldflags "-X github.com/helm-drift/helm-drift/internal/cli.version=...".
// imageRepository is where the release process pushes the self-management Jobs' image (make
// image; IMAGE_REPOSITORY=... for make build, dist and image): a released build's default
// --self-hook-image is imageRepository:version.
var (
	version         = ""
	commit          = ""
	imageRepository = ""
)

// defaultHookImage is a released build's own image for the resumer Job, "" for a build that
// names no image repository or is not a release (no version stamped, or a pre-release "-dev").
func defaultHookImage() string {
	v := version
	if imageRepository == "" || v == "" || strings.Contains(v, "-dev") || strings.Contains(v, "dirty") {
		return ""
	}
	return imageRepository + ":" + v
}

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
	if img := defaultHookImage(); img != "" {
		fmt.Fprintf(out, "image:    %s (the default --self-hook-image)\n", img)
	} else {
		fmt.Fprintf(out, "image:    none (not a released build: --self-bracket job needs --self-hook-image)\n")
	}
	return ExitOK
}
