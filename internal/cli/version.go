package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	check := false
	for _, a := range args {
		switch a {
		case "-h", "--help":
			fmt.Fprintf(out, "Usage: helm drift version [--check]\n  Prints the version, commit, Go and Helm SDK versions, how the binary was installed and\n  its default hook image. --check: exit 1 with a warning when the binary's version is not\n  the plugin.yaml's beside it (a stale binary after a plugin update).\n")
			return ExitOK
		case "--check":
			check = true
		default:
			fmt.Fprintf(errOut, "helm-drift version: unknown argument %q (want --check)\n", a)
			return ExitError
		}
	}
	v := currentVersion()
	fmt.Fprintf(out, "helm-drift %s\ncommit:   %s\ngo:       %s\nhelm sdk: %s\n", v.Version, v.Commit, v.Go, v.HelmSDK)
	if img := defaultHookImage(); img != "" {
		fmt.Fprintf(out, "image:    %s (the default --self-hook-image)\n", img)
	} else {
		fmt.Fprintf(out, "image:    none (not a released build: --self-bracket job needs --self-hook-image)\n")
	}
	dir := pluginDir()
	how := "unknown (not installed as a Helm plugin by its install hook)"
	if b, err := os.ReadFile(filepath.Join(dir, "bin", ".installed")); err == nil {
		how = strings.TrimSpace(string(b))
	}
	fmt.Fprintf(out, "install:  %s\n", how)
	if !check {
		return ExitOK
	}
	b, err := os.ReadFile(filepath.Join(dir, "plugin.yaml"))
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift version --check: no plugin.yaml in %s (%v): not installed as a Helm plugin\n", dir, err)
		return ExitError
	}
	want := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "version:") {
			want = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "version:")), `"'`)
			break
		}
	}
	if got := strings.TrimPrefix(v.Version, "v"); got != want {
		fmt.Fprintf(errOut, "helm-drift version --check: warning: the binary is %s but %s says %s: run helm plugin update drift (or reinstall the plugin)\n", v.Version, filepath.Join(dir, "plugin.yaml"), want)
		return ExitError
	}
	fmt.Fprintf(out, "check:    the binary and %s agree (%s)\n", filepath.Join(dir, "plugin.yaml"), want)
	return ExitOK
}

// pluginDir is the plugin directory the binary runs from: HELM_PLUGIN_DIR when Helm runs it,
// else the directory above the executable's bin/.
func pluginDir() string {
	if d := os.Getenv("HELM_PLUGIN_DIR"); d != "" {
		return d
	}
	exe, err := os.Executable()
	if err != nil {
		return "."
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Dir(filepath.Dir(exe))
}
