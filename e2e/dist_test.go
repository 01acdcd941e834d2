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

	noGo := func(h *helmCLI, url string) {
		var env []string
		for _, kv := range h.env {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HELM_DRIFT_RELEASE_URL=") {
				env = append(env, kv)
			}
		}
		h.env = append(env, "PATH=/usr/bin:/bin", "HELM_DRIFT_RELEASE_URL="+url)
	}
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
