// Command dist builds helm-drift's release archives: for each platform, a static binary built
// reproducibly (-trimpath, no VCS stamp, no build id, the version, commit and image repository
// stamped) in a Helm plugin archive (plugin.yaml, bin/helm-drift, scripts/install.sh,
// completion.yaml and plugin.complete at its root, where helm plugin install URL looks), every file time set to SOURCE_DATE_EPOCH, owner root, entries sorted, gzip
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
	helm4 := flag.String("helm4", "", "a Helm 4 CLI: with -sign-key, package the drift and drift-render plugins as signed Helm 4 plugin tarballs")
	signKey := flag.String("sign-key", "", "the name of the PGP key that signs the Helm 4 plugin tarballs")
	keyring := flag.String("keyring", "", "the secret keyring holding -sign-key")
	passphrase := flag.String("passphrase-file", "", "a file holding the key's passphrase (none: an unprotected key)")
	flag.Parse()
	sign := signing{helm4: *helm4, key: *signKey, keyring: *keyring, passphrase: *passphrase}
	if err := run(*version, *commit, *imageRepo, *out, strings.Split(*platforms, ","), time.Unix(*epoch, 0).UTC(), sign); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
}

// signing says how to make the Helm 4 plugin tarballs (none without a key).
type signing struct{ helm4, key, keyring, passphrase string }

func run(version, commit, imageRepo, out string, platforms []string, mtime time.Time, sign signing) error {
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
	completion, err := os.ReadFile("completion.yaml")
	if err != nil {
		return err
	}
	complete, err := os.ReadFile("plugin.complete")
	if err != nil {
		return err
	}
	extra := []entry{{"completion.yaml", completion, 0o644}, {"plugin.complete", complete, 0o755}}
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
		archive, err := tarball(mtime, append([]entry{
			{"bin/" + name, bin, 0o755},
			{"bin/.installed", []byte("release archive " + file + "\n"), 0o644},
			{"plugin.yaml", plugin, 0o644},
			{"scripts/install.sh", install, 0o755},
		}, extra...))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, file), archive, 0o644); err != nil {
			return err
		}
		sums[file] = fmt.Sprintf("%x", sha256.Sum256(archive))
		fmt.Printf("%s  %s\n", sums[file], file)
	}
	if sign.key != "" {
		if err := pluginTarballs(version, out, plugin, install, extra, sign, sums); err != nil {
			return err
		}
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

// pluginTarballs packages the drift CLI plugin and the drift-render post-renderer plugin with
// "helm plugin package --sign" (Helm 4): each tarball holds the plugin's plugin.yaml and its
// scripts, no binary; installed, its hook fetches and verifies the archive for the platform.
// Each comes with its .prov, signed by sign.key; both go into sums.
func pluginTarballs(version, out string, plugin, install []byte, extra []entry, sign signing, sums map[string]string) error {
	if sign.helm4 == "" || sign.keyring == "" {
		return fmt.Errorf("-sign-key needs -helm4 (a Helm 4 CLI) and -keyring (the secret keyring)")
	}
	stage, err := os.MkdirTemp("", "helm-drift-plugins-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	render, err := os.ReadFile("plugins/drift-render/plugin.yaml")
	if err != nil {
		return err
	}
	renderSh, err := os.ReadFile("plugins/drift-render/render.sh")
	if err != nil {
		return err
	}
	files := map[string][]entry{
		"drift":        append([]entry{{"plugin.yaml", plugin, 0o644}, {"scripts/install.sh", install, 0o755}}, extra...),
		"drift-render": {{"plugin.yaml", setVersion(render, version), 0o644}, {"render.sh", renderSh, 0o755}, {"scripts/install.sh", install, 0o755}},
	}
	for name, entries := range files {
		dir := filepath.Join(stage, name)
		for _, e := range entries {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, e.name)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, e.name), e.data, os.FileMode(e.mode)); err != nil {
				return err
			}
		}
		args := []string{"plugin", "package", dir, "--sign", "--key", sign.key, "--keyring", sign.keyring, "-d", out}
		if sign.passphrase != "" {
			args = append(args, "--passphrase-file", sign.passphrase)
		}
		cmd := exec.Command(sign.helm4, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("helm plugin package %s: %w", name, err)
		}
		for _, f := range []string{name + "-" + version + ".tgz", name + "-" + version + ".tgz.prov"} {
			data, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				return err
			}
			sums[f] = fmt.Sprintf("%x", sha256.Sum256(data))
			fmt.Printf("%s  %s\n", sums[f], f)
		}
	}
	return nil
}
