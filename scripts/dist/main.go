// Command dist builds helm-drift's release archives: for each platform, a static binary built
// reproducibly (-trimpath, no VCS stamp, no build id, the version, commit and image repository
// stamped) in a Helm plugin archive (plugin.yaml, bin/helm-drift, scripts/install.sh,
// completion.yaml and plugin.complete at its root, where helm plugin install URL looks), every
// file time set to SOURCE_DATE_EPOCH, owner root, entries sorted, gzip without a name or time;
// the Helm 4 plugin tarballs of the drift and drift-render plugins, packed the same way (and,
// with a key, signed: NAME-VERSION.tgz.prov); and a SHA256SUMS file over the archives and
// tarballs. The signatures carry their own time, so their bytes differ per signing:
// SIGNATURES.txt says so and how to verify them. Run by make dist.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/provenance"
)

func main() {
	version := flag.String("version", "", "the release version, x.y.z")
	commit := flag.String("commit", "unknown", "the commit stamped into the binaries")
	imageRepo := flag.String("image-repository", "", "the image repository stamped (the default --self-hook-image is REPO:vVERSION)")
	out := flag.String("out", "dist", "the output directory")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "GOOS/GOARCH list")
	epoch := flag.Int64("epoch", 0, "the time of every archive entry, seconds since 1970 (SOURCE_DATE_EPOCH)")
	signKey := flag.String("sign-key", "", "the name of the PGP key that signs the Helm 4 plugin tarballs (none: unsigned)")
	keyring := flag.String("keyring", "", "the secret keyring holding -sign-key")
	passphrase := flag.String("passphrase-file", "", "a file holding the key's passphrase (none: an unprotected key)")
	verify := flag.String("verify", "", "a release directory: rebuild it (its platforms, unsigned) and compare every file its SHA256SUMS lists")
	flag.Parse()
	if *verify != "" {
		if err := verifyRelease(*verify, *version, *commit, *imageRepo, time.Unix(*epoch, 0).UTC()); err != nil {
			fmt.Fprintf(os.Stderr, "verify-release: %v\n", err)
			os.Exit(1)
		}
		return
	}
	sign := signing{key: *signKey, keyring: *keyring, passphrase: *passphrase}
	if err := run(*version, *commit, *imageRepo, *out, strings.Split(*platforms, ","), time.Unix(*epoch, 0).UTC(), sign, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
}

// signing says how to sign the Helm 4 plugin tarballs (unsigned without a key).
type signing struct{ key, keyring, passphrase string }

// run makes the release in out, printing each file's sum on log.
func run(version, commit, imageRepo, out string, platforms []string, mtime time.Time, sign signing, log io.Writer) error {
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
		fmt.Fprintf(log, "%s  %s\n", sums[file], file)
	}
	if err := pluginTarballs(version, out, plugin, install, extra, mtime, sign, sums, log); err != nil {
		return err
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

// pluginTarballs packs the drift CLI plugin and the drift-render post-renderer plugin as Helm 4
// plugin tarballs, laid out as "helm plugin package" lays them out (the plugin's files under a
// directory named after it) but reproducibly, as the archives are: each holds plugin.yaml and
// its scripts, no binary (installed, its hook fetches and verifies the archive for the
// platform). With a key each is then signed with Helm's own provenance code, as "helm plugin
// package --sign" signs (the tarball's SHA-256 and the plugin's metadata, clear-signed): a
// signature covers the tarball's bytes, so "helm plugin install --verify" and "helm plugin
// verify" check it. The tarballs go into sums; the .prov files do not (see SIGNATURES.txt).
func pluginTarballs(version, out string, plugin, install []byte, extra []entry, mtime time.Time, sign signing, sums map[string]string, log io.Writer) error {
	render, err := os.ReadFile("plugins/drift-render/plugin.yaml")
	if err != nil {
		return err
	}
	renderSh, err := os.ReadFile("plugins/drift-render/render.sh")
	if err != nil {
		return err
	}
	var signer *provenance.Signatory
	if sign.key != "" {
		if signer, err = signatory(sign); err != nil {
			return err
		}
	}
	files := map[string][]entry{
		"drift":        append([]entry{{"plugin.yaml", plugin, 0o644}, {"scripts/install.sh", install, 0o755}}, extra...),
		"drift-render": {{"plugin.yaml", setVersion(render, version), 0o644}, {"render.sh", renderSh, 0o755}, {"scripts/install.sh", install, 0o755}},
	}
	var signed []string
	for _, name := range []string{"drift", "drift-render"} {
		var entries []entry
		var metadata []byte
		for _, e := range files[name] {
			entries = append(entries, entry{name + "/" + e.name, e.data, e.mode})
			if e.name == "plugin.yaml" {
				metadata = e.data
			}
		}
		data, err := tarball(mtime, entries)
		if err != nil {
			return err
		}
		file := name + "-" + version + ".tgz"
		if err := os.WriteFile(filepath.Join(out, file), data, 0o644); err != nil {
			return err
		}
		sums[file] = fmt.Sprintf("%x", sha256.Sum256(data))
		fmt.Fprintf(log, "%s  %s\n", sums[file], file)
		if signer == nil {
			continue
		}
		prov, err := signer.ClearSign(data, file, metadata)
		if err != nil {
			return fmt.Errorf("signing %s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(out, file+".prov"), []byte(prov), 0o644); err != nil {
			return err
		}
		signed = append(signed, file+".prov")
		fmt.Fprintf(log, "signed  %s.prov\n", file)
	}
	if len(signed) == 0 {
		return nil
	}
	note := "The Helm 4 plugin tarballs are signed: " + strings.Join(signed, ", ") + ".\n\n" +
		"A signature carries the time it was made, so these files differ from one signing to the next,\n" +
		"and SHA256SUMS does not list them. What they sign does not differ: each holds the SHA-256 of\n" +
		"its tarball, which SHA256SUMS lists and a rebuild from the tag reproduces (make verify-release).\n" +
		"Verify a signature against the release key, not its bytes:\n\n" +
		"    helm plugin verify drift-" + version + ".tgz --keyring KEYRING\n" +
		"    helm plugin install RELEASE_URL/drift-" + version + ".tgz --keyring KEYRING   (verifies before it installs)\n"
	return os.WriteFile(filepath.Join(out, "SIGNATURES.txt"), []byte(note), 0o644)
}

// signatory loads sign.key from sign.keyring, decrypting it with the passphrase file's content
// (its trailing line break dropped, as helm plugin package --passphrase-file reads it).
func signatory(sign signing) (*provenance.Signatory, error) {
	if sign.keyring == "" {
		return nil, fmt.Errorf("-sign-key needs -keyring (the secret keyring holding the key)")
	}
	signer, err := provenance.NewFromKeyring(sign.keyring, sign.key)
	if err != nil {
		return nil, fmt.Errorf("key %q in %s: %w", sign.key, sign.keyring, err)
	}
	if signer.Entity.PrivateKey != nil && signer.Entity.PrivateKey.Encrypted {
		if sign.passphrase == "" {
			return nil, fmt.Errorf("key %q is protected by a passphrase: give PASSPHRASE_FILE", sign.key)
		}
		pass, err := os.ReadFile(sign.passphrase)
		if err != nil {
			return nil, err
		}
		pass = bytes.TrimRight(pass, "\r\n")
		if err := signer.DecryptKey(func(string) ([]byte, error) { return pass, nil }); err != nil {
			return nil, fmt.Errorf("key %q: %w", sign.key, err)
		}
	}
	return signer, nil
}

// verifyRelease rebuilds the release in dir (the platforms of its archives) into a temporary
// directory and compares each file dir's SHA256SUMS lists: the file in dir against the sum (a
// release changed after it was made), and the rebuild's against it (a release this source does
// not make). It names every file that differs; nil means every one is reproduced.
func verifyRelease(dir, version, commit, imageRepo string, mtime time.Time) error {
	want, err := readSums(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return err
	}
	version = strings.TrimPrefix(version, "v")
	var platforms []string
	prefix := "helm-drift-v" + version + "-"
	for f := range want {
		if strings.HasPrefix(f, prefix) && strings.HasSuffix(f, ".tar.gz") {
			goos, goarch, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(f, prefix), ".tar.gz"), "-")
			platforms = append(platforms, goos+"/"+goarch)
		}
	}
	if len(platforms) == 0 {
		return fmt.Errorf("%s/SHA256SUMS lists no archive of version %s (helm-drift-v%s-OS-ARCH.tar.gz): is VERSION the release's?", dir, version, version)
	}
	sort.Strings(platforms)
	rebuilt, err := os.MkdirTemp("", "helm-drift-verify-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(rebuilt)
	if err := run(version, commit, imageRepo, rebuilt, platforms, mtime, signing{}, io.Discard); err != nil {
		return fmt.Errorf("rebuilding %s: %w", version, err)
	}
	got, err := readSums(filepath.Join(rebuilt, "SHA256SUMS"))
	if err != nil {
		return err
	}
	var files, bad []string
	for f := range want {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: not in the release directory (%v)", f, err))
		case fmt.Sprintf("%x", sha256.Sum256(data)) != want[f]:
			bad = append(bad, f+": the release's file does not match its SHA256SUMS (changed after the release was made)")
		case got[f] == "":
			bad = append(bad, f+": this source does not make it")
		case got[f] != want[f]:
			bad = append(bad, fmt.Sprintf("%s: rebuilt %s, the release says %s", f, got[f][:12], want[f][:12]))
		default:
			fmt.Printf("reproduced  %s  %s\n", want[f], f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d files differ from the rebuild of %s (commit %s):\n  %s", len(bad), len(files), version, commit, strings.Join(bad, "\n  "))
	}
	fmt.Printf("verify-release: all %d files of %s reproduced from this source (commit %s); the signatures are verified with helm plugin verify, not compared\n", len(files), dir, commit)
	return nil
}

// readSums reads a SHA256SUMS file: file name to hex digest.
func readSums(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s line %d: want \"SHA256  FILE\", got %q", path, i+1, line)
		}
		sums[file] = sum
	}
	return sums, nil
}
