// Command dist builds helm-drift's release archives: for each platform, a static binary built
// reproducibly (-trimpath, no VCS stamp, no build id, the version, commit and image repository
// stamped) in a Helm plugin archive (plugin.yaml, bin/helm-drift, scripts/install.sh at its
// root, where helm plugin install URL looks for them), every file time set to SOURCE_DATE_EPOCH, owner root, entries sorted, gzip
// without a name or time; and a SHA256SUMS file over the archives. Run by make dist.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	version := flag.String("version", "", "the release version, x.y.z")
	commit := flag.String("commit", "unknown", "the commit stamped into the binaries")
	imageRepo := flag.String("image-repository", "", "the image repository stamped (the default --self-hook-image is REPO:vVERSION)")
	out := flag.String("out", "dist", "the output directory")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "GOOS/GOARCH list")
	epoch := flag.Int64("epoch", 0, "the time of every archive entry, seconds since 1970 (SOURCE_DATE_EPOCH)")
	flag.Parse()
	if err := run(*version, *commit, *imageRepo, *out, strings.Split(*platforms, ","), time.Unix(*epoch, 0).UTC()); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
}

func run(version, commit, imageRepo, out string, platforms []string, mtime time.Time) error {
	if strings.TrimPrefix(version, "v") == "" {
		return fmt.Errorf("-version is required (make dist VERSION=x.y.z)")
	}
	version = strings.TrimPrefix(version, "v")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	plugin, err := os.ReadFile("plugin.yaml")
	if err != nil {
		return err
	}
	plugin = setVersion(plugin, version)
	install, err := os.ReadFile("scripts/install.sh")
	if err != nil {
		return err
	}
	sums := map[string]string{}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("platform %q: want GOOS/GOARCH", p)
		}
		bin, err := build(goos, goarch, version, commit, imageRepo)
		if err != nil {
			return err
		}
		name := "helm-drift"
		if goos == "windows" {
			name += ".exe"
		}
		file := fmt.Sprintf("helm-drift-v%s-%s-%s.tar.gz", version, goos, goarch)
		archive, err := tarball(mtime, []entry{
			{"bin/" + name, bin, 0o755},
			{"bin/.installed", []byte("release archive " + file + "\n"), 0o644},
			{"plugin.yaml", plugin, 0o644},
			{"scripts/install.sh", install, 0o755},
		})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, file), archive, 0o644); err != nil {
			return err
		}
		sums[file] = fmt.Sprintf("%x", sha256.Sum256(archive))
		fmt.Printf("%s  %s\n", sums[file], file)
	}
	var files []string
	for f := range sums {
		files = append(files, f)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s  %s\n", sums[f], f)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// setVersion writes version into plugin.yaml's version line.
func setVersion(plugin []byte, version string) []byte {
	lines := strings.Split(string(plugin), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "version:") {
			lines[i] = fmt.Sprintf("version: %q", version)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// build compiles cmd/helm-drift for goos/goarch, reproducibly.
func build(goos, goarch, version, commit, imageRepo string) ([]byte, error) {
	tmp, err := os.CreateTemp("", "helm-drift-dist-*")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	ld := fmt.Sprintf("-s -w -buildid= -X github.com/helm-drift/helm-drift/internal/cli.version=v%s -X github.com/helm-drift/helm-drift/internal/cli.commit=%s", version, commit)
	if imageRepo != "" {
		ld += " -X github.com/helm-drift/helm-drift/internal/cli.imageRepository=" + imageRepo
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ld, "-o", tmp.Name(), "./cmd/helm-drift")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s/%s: %w", goos, goarch, err)
	}
	return os.ReadFile(tmp.Name())
}

type entry struct {
	name string
	data []byte
	mode int64
}

// tarball writes entries, with their directories, sorted, as a reproducible .tar.gz.
func tarball(mtime time.Time, entries []entry) ([]byte, error) {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := filepath.Dir(e.name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var all []entry
	for d := range dirs {
		all = append(all, entry{name: d + "/", mode: 0o755})
	}
	all = append(all, entries...)
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range all {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
