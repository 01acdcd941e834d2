package e2e

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// noGo puts h on a PATH without Go (/usr/bin:/bin; Go lives in /usr/local/go here), with url as
// the release location the install hook downloads from.
func noGo(h *helmCLI, url string) {
	var env []string
	for _, kv := range h.env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HELM_DRIFT_RELEASE_URL=") {
			env = append(env, kv)
		}
	}
	h.env = append(env, "PATH=/usr/bin:/bin", "HELM_DRIFT_RELEASE_URL="+url)
}

// makeDist runs make dist for linux/amd64 into dir and returns the archive's name.
func makeDist(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("make", "dist", "PLATFORMS=linux/amd64", "DIST="+dir)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	return "helm-drift-v0.1.0-linux-amd64.tar.gz"
}

// TestDistInstall: make dist builds byte-identical archives and SHA256SUMS twice over; served
// over loopback HTTP as the release location, the install hook of a source copy on a machine
// without Go downloads the archive for this platform, verifies it and installs it, under Helm 3
// and Helm 4, and "helm drift version" says so; a tampered archive and a wrong checksum each
// install nothing and say why; the archive itself installs with "helm plugin install URL"
// (Helm 3).
func TestDistInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Parallel() // its own DIST, clone and Helm homes; links on a core the cluster tests leave idle
	d1, d2 := t.TempDir(), t.TempDir()
	archive := makeDist(t, d1)
	makeDist(t, d2)
	for _, f := range []string{archive, "SHA256SUMS"} {
		a, _ := os.ReadFile(filepath.Join(d1, f))
		b, _ := os.ReadFile(filepath.Join(d2, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: two make dist runs differ (%d and %d bytes)", f, len(a), len(b))
		}
	}
	commit, _ := exec.Command("git", "-C", repoRoot, "rev-parse", "--short", "HEAD").Output()

	// The release location, and two broken ones.
	serve := func(dir string) string {
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	good := serve(d1)
	tampered := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(d1, archive))
	data[len(data)/2] ^= 0xff
	os.WriteFile(filepath.Join(tampered, archive), data, 0o644)
	sums, _ := os.ReadFile(filepath.Join(d1, "SHA256SUMS"))
	os.WriteFile(filepath.Join(tampered, "SHA256SUMS"), sums, 0o644)
	wrongSum := t.TempDir()
	orig, _ := os.ReadFile(filepath.Join(d1, archive))
	os.WriteFile(filepath.Join(wrongSum, archive), orig, 0o644)
	os.WriteFile(filepath.Join(wrongSum, "SHA256SUMS"), []byte(strings.Repeat("0", 64)+"  "+archive+"\n"), 0o644)

	source := func() string {
		dir := filepath.Join(t.TempDir(), "helm-drift")
		if err := copyTracked(repoRoot, dir); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(dir, "bin"))
		return dir
	}
	for _, name := range []string{"helm3", "helm4"} {
		t.Run(name, func(t *testing.T) {
			for _, bad := range []struct{ url, want string }{
				{serve(tampered), "checksum mismatch for " + archive},
				{serve(wrongSum), "checksum mismatch for " + archive},
			} {
				h := newHelm(t, name)
				noGo(h, bad.url)
				_, errOut := h.run(t, true, nil, "plugin", "install", source())
				if !strings.Contains(errOut, bad.want) || !strings.Contains(errOut, "nothing was installed") {
					t.Errorf("a bad release: want %q:\n%s", bad.want, errOut)
				}
				// Helm keeps the plugin's entry when its install hook fails; no binary came.
				if out, _ := h.run(t, true, nil, "drift", "version"); strings.Contains(out, "helm-drift v") {
					t.Errorf("a bad release installed a binary:\n%s", out)
				}
			}
			h := newHelm(t, name)
			noGo(h, good)
			out, errOut := h.run(t, false, nil, "plugin", "install", source())
			if !strings.Contains(out+errOut, "(sha256 verified)") {
				t.Errorf("install without Go: %s%s", out, errOut)
			}
			out, _ = h.run(t, false, nil, "drift", "version", "--check")
			for _, want := range []string{"helm-drift v0.1.0", "commit:   " + strings.TrimSpace(string(commit)), "install:  release archive " + archive + ", sha256 ", "verified against " + good + "/SHA256SUMS", "check:    the binary and"} {
				if !strings.Contains(out, want) {
					t.Errorf("helm drift version --check lacks %q:\n%s", want, out)
				}
			}
		})
	}
	// The archive itself, by URL (Helm 3 installs a plugin tarball from a URL without a
	// provenance file).
	h := newHelm(t, "helm3")
	noGo(h, "http://127.0.0.1:1/unused")
	h.run(t, false, nil, "plugin", "install", good+"/"+archive)
	out, _ := h.run(t, false, nil, "drift", "version")
	if !strings.Contains(out, "helm-drift v0.1.0") || !strings.Contains(out, "install:  release archive "+archive) {
		t.Errorf("helm drift version after installing the archive by URL:\n%s", out)
	}
}

// throwawayKey makes a PGP key at test time (never a committed one) and returns its name, the
// secret keyring that signs and the public keyring that verifies.
func throwawayKey(t *testing.T) (name, secring, pubring string) {
	t.Helper()
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Fatalf("gpg is needed to make the throwaway signing key (Debian package gnupg; .ci/run installs it): %v", err)
	}
	home := t.TempDir()
	name = "helm-drift test release"
	params := filepath.Join(home, "params")
	os.WriteFile(params, []byte("%no-protection\nKey-Type: RSA\nKey-Length: 2048\nName-Real: "+name+"\nName-Email: release@helm-drift.invalid\nExpire-Date: 0\n%commit\n"), 0o600)
	run := func(args ...string) []byte {
		cmd := exec.Command(gpg, append([]string{"--batch", "--homedir", home}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %v: %v", args, err)
		}
		return out
	}
	run("--gen-key", params)
	secring, pubring = filepath.Join(home, "secring.gpg"), filepath.Join(home, "pubring.gpg")
	os.WriteFile(secring, run("--export-secret-keys"), 0o600)
	os.WriteFile(pubring, run("--export"), 0o644)
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	return name, secring, pubring
}

// TestDistSignedHelm4: make dist with a signing key also packages the drift and drift-render
// plugins as Helm 4 plugin tarballs with .prov files; on a machine without Go, Helm 4 installs
// both from the release location over HTTP, and again from the test registry after make
// push-plugin, verifying them against the public key (their hooks then fetch and verify the
// binary archive), and drift-render post-renders; an unsigned tarball is refused unless
// --verify=false.
func TestDistSignedHelm4(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Parallel() // its own DIST, clone and Helm homes; links on a core the cluster tests leave idle
	key, secring, pubring := throwawayKey(t)
	signedDist := func(dir string) {
		t.Helper()
		cmd := exec.Command("make", "dist", "PLATFORMS=linux/amd64", "DIST="+dir, "SIGN_KEY="+key, "KEYRING="+secring)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make dist with a key: %v\n%s", err, out)
		}
	}
	dist, again := t.TempDir(), t.TempDir()
	signedDist(dist)
	signedDist(again)
	// Two signed runs on one commit: every file but the signatures byte-identical.
	entries, _ := os.ReadDir(dist)
	compared := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".prov") {
			continue
		}
		a, _ := os.ReadFile(filepath.Join(dist, e.Name()))
		b, err := os.ReadFile(filepath.Join(again, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: two signed make dist runs differ (%d and %d bytes, %v)", e.Name(), len(a), len(b), err)
		}
		compared++
	}
	if compared < 5 {
		t.Errorf("compared %d files, want the archive, both tarballs, SHA256SUMS and SIGNATURES.txt", compared)
	}
	sums, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	for _, f := range []string{"drift-0.1.0.tgz", "drift-render-0.1.0.tgz", "helm-drift-v0.1.0-linux-amd64.tar.gz"} {
		if !strings.Contains(string(sums), "  "+f+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", f, sums)
		}
	}
	if strings.Contains(string(sums), ".prov") {
		t.Errorf("SHA256SUMS lists a signature, whose bytes differ per signing:\n%s", sums)
	}
	if note, _ := os.ReadFile(filepath.Join(dist, "SIGNATURES.txt")); !strings.Contains(string(note), "drift-0.1.0.tgz.prov") || !strings.Contains(string(note), "helm plugin verify") {
		t.Errorf("SIGNATURES.txt does not say what to verify:\n%s", note)
	}
	// A tarball changed by one byte after signing is refused.
	tampered := t.TempDir()
	for _, f := range []string{"drift-0.1.0.tgz", "drift-0.1.0.tgz.prov"} {
		copyFile(filepath.Join(dist, f), filepath.Join(tampered, f), 0o644)
	}
	data, _ := os.ReadFile(filepath.Join(tampered, "drift-0.1.0.tgz"))
	data[len(data)/2] ^= 1
	os.WriteFile(filepath.Join(tampered, "drift-0.1.0.tgz"), data, 0o644)
	ht := newHelm(t, "helm4")
	if _, errOut := ht.run(t, true, nil, "plugin", "install", filepath.Join(tampered, "drift-0.1.0.tgz"), "--keyring", pubring); !strings.Contains(errOut, "sha256 sum does not match") {
		t.Errorf("a tarball changed after signing: want a refusal naming the sum:\n%s", errOut)
	}
	if out, _ := ht.run(t, false, nil, "plugin", "list"); strings.Contains(out, "drift") {
		t.Errorf("the tampered tarball was installed:\n%s", out)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	t.Cleanup(srv.Close)
	h := newHelm(t, "helm4")
	noGo(h, srv.URL)
	for _, p := range []string{"drift", "drift-render"} {
		out, errOut := h.run(t, false, nil, "plugin", "install", srv.URL+"/"+p+"-0.1.0.tgz", "--keyring", pubring)
		if !strings.Contains(out+errOut, "(sha256 verified)") || !strings.Contains(out+errOut, "Plugin Hash Verified") {
			t.Errorf("%s: the hook did not install the verified archive:\n%s%s", p, out, errOut)
		}
	}
	list, _ := h.run(t, false, nil, "plugin", "list")
	for _, p := range []string{"drift ", "drift-render"} {
		if !hasRow(list, p, "signed") {
			t.Errorf("plugin list: %s is not listed as signed:\n%s", p, list)
		}
	}
	if out, _ := h.run(t, false, nil, "drift", "version"); !strings.Contains(out, "helm-drift v0.1.0") {
		t.Errorf("helm drift version:\n%s", out)
	}
	args := append([]string{"template", "rel", chart, "-n", "platform", "--post-renderer", "drift-render"}, postRendererArgs(ruleArgs...)...)
	if out, _ := h.run(t, false, nil, args...); !strings.Contains(out, "driftDetection:") {
		t.Errorf("drift-render from the signed tarball did not post-render:\n%s", out)
	}

	// The same from an OCI registry: make push-plugin, then helm plugin install oci://... (Helm
	// 4.3.1 reads the version from the reference's tag: it passes --version only to VCS
	// sources).
	if cluster != nil {
		push := exec.Command("make", "push-plugin", "REGISTRY=oci://"+cluster.Registry+"/plugins", "DIST="+dist, "PLAIN_HTTP=1")
		push.Dir = repoRoot
		pushed, err := push.CombinedOutput()
		if err != nil || !strings.Contains(string(pushed), "oci://"+cluster.Registry+"/plugins/drift-render:0.1.0@sha256:") {
			t.Fatalf("make push-plugin: %v\n%s", err, pushed)
		}
		o := newHelm(t, "helm4")
		noGo(o, srv.URL)
		for _, p := range []string{"drift", "drift-render"} {
			out, errOut := o.run(t, false, nil, "plugin", "install", "oci://"+cluster.Registry+"/plugins/"+p+":0.1.0", "--plain-http", "--keyring", pubring)
			if !strings.Contains(out+errOut, "(sha256 verified)") || !strings.Contains(out+errOut, "Plugin Hash Verified") {
				t.Errorf("%s from OCI: not verified:\n%s%s", p, out, errOut)
			}
		}
		list, _ := o.run(t, false, nil, "plugin", "list")
		if !hasRow(list, "drift ", "signed") || !hasRow(list, "drift-render", "signed") {
			t.Errorf("plugin list after the OCI installs:\n%s", list)
		}
		if out, _ := o.run(t, false, nil, append([]string{"template", "rel", chart, "-n", "platform", "--post-renderer", "drift-render"}, postRendererArgs(ruleArgs...)...)...); !strings.Contains(out, "driftDetection:") {
			t.Errorf("drift-render from OCI did not post-render:\n%s", out)
		}
	}

	// Unsigned: refused without --verify=false.
	unsigned := t.TempDir()
	src := filepath.Join(unsigned, "drift")
	os.MkdirAll(filepath.Join(src, "scripts"), 0o755)
	copyFile(filepath.Join(repoRoot, "plugin.yaml"), filepath.Join(src, "plugin.yaml"), 0o644)
	copyFile(filepath.Join(repoRoot, "scripts/install.sh"), filepath.Join(src, "scripts/install.sh"), 0o755)
	h2 := newHelm(t, "helm4")
	noGo(h2, srv.URL)
	h2.run(t, false, nil, "plugin", "package", src, "--sign=false", "-d", unsigned)
	_, errOut := h2.run(t, true, nil, "plugin", "install", filepath.Join(unsigned, "drift-0.1.0.tgz"), "--keyring", pubring)
	if !strings.Contains(errOut, "plugin verification failed: no provenance file (.prov) found") {
		t.Errorf("an unsigned tarball: want a refusal about its provenance:\n%s", errOut)
	}
}

// TestRelease: make release, against the test registry with a throwaway key, writes release
// notes that name the self-management image with the digest the registry serves and both
// plugins with theirs, and its binaries default --self-hook-image to that image.
func TestRelease(t *testing.T) {
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	t.Parallel() // its own DIST and registry repository; make image under repoBin
	key, secring, _ := throwawayKey(t)
	dist := t.TempDir()
	repo := cluster.Registry + "/release/helm-drift"
	repoBin.Lock() // make release runs make image
	defer repoBin.Unlock()
	cmd := exec.Command("make", "release", "VERSION=0.1.0", "DIST="+dist, "PLATFORMS=linux/amd64", "REGISTRY=oci://"+cluster.Registry+"/release",
		"IMAGE_REPOSITORY="+repo, "SIGN_KEY="+key, "KEYRING="+secring, "INSECURE=1", "PLAIN_HTTP=1")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	notes, err := os.ReadFile(filepath.Join(dist, "RELEASE_NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodHead, "http://"+cluster.Registry+"/v2/release/helm-drift/manifests/v0.1.0", nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the registry does not serve the image: %v %v", err, res)
	}
	res.Body.Close()
	for _, want := range []string{repo + ":v0.1.0@" + res.Header.Get("Docker-Content-Digest"), "oci://" + cluster.Registry + "/release/drift:0.1.0@sha256:",
		"oci://" + cluster.Registry + "/release/drift-render:0.1.0@sha256:", "helm-drift-v0.1.0-linux-amd64.tar.gz", "drift-0.1.0.tgz.prov"} {
		if !strings.Contains(string(notes), want) {
			t.Errorf("the release notes lack %q:\n%s", want, notes)
		}
	}
	x := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dist, "helm-drift-v0.1.0-linux-amd64.tar.gz"), "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(x, "bin/helm-drift"), "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "image:    "+repo+":v0.1.0 (the default --self-hook-image)") {
		t.Errorf("the released binary's version: %v\n%s", err, out)
	}
}

// TestVerifyRelease: make verify-release, in a clone of this commit, rebuilds a signed release
// and finds every file its SHA256SUMS lists reproduced; with one source line changed it fails
// and names the files that differ; a release file changed after the release is named too.
func TestVerifyRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Parallel() // its own DIST, clone and Helm homes; links on a core the cluster tests leave idle
	key, secring, _ := throwawayKey(t)
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", "--shared", repoRoot, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	mk := func(args ...string) (string, error) {
		cmd := exec.Command("make", append([]string{"-s"}, args...)...)
		cmd.Dir = clone
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	release := t.TempDir()
	if out, err := mk("dist", "VERSION=9.9.9", "PLATFORMS=linux/amd64", "DIST="+release, "SIGN_KEY="+key, "KEYRING="+secring); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	out, err := mk("verify-release", "VERSION=9.9.9", "DIST="+release)
	if err != nil || !strings.Contains(out, "all 3 files of "+release+" reproduced") {
		t.Fatalf("make verify-release on the unchanged tree: %v\n%s", err, out)
	}
	// One source line changed: the binary, so its archive, differs; the tarballs do not.
	file := filepath.Join(clone, "internal/cli/version.go")
	src, _ := os.ReadFile(file)
	changed := strings.Replace(string(src), "(want --check)", "(want --check only)", 1)
	if changed == string(src) {
		t.Fatal("internal/cli/version.go no longer holds the line this test changes")
	}
	os.WriteFile(file, []byte(changed), 0o644)
	out, err = mk("verify-release", "VERSION=9.9.9", "DIST="+release)
	if err == nil || !strings.Contains(out, "1 of 3 files differ") || !strings.Contains(out, "helm-drift-v9.9.9-linux-amd64.tar.gz: rebuilt") || strings.Contains(out, "drift-9.9.9.tgz: rebuilt") {
		t.Errorf("make verify-release with a changed source line: %v, want a failure naming the archive only\n%s", err, out)
	}
	os.WriteFile(file, src, 0o644)
	// A release file changed after the release was made.
	tgz := filepath.Join(release, "drift-render-9.9.9.tgz")
	data, _ := os.ReadFile(tgz)
	os.WriteFile(tgz, append(data, 0), 0o644)
	if out, err := mk("verify-release", "VERSION=9.9.9", "DIST="+release); err == nil || !strings.Contains(out, "drift-render-9.9.9.tgz: the release's file does not match its SHA256SUMS") {
		t.Errorf("make verify-release with a changed release file: %v\n%s", err, out)
	}
}
