package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImage: make image builds the self-management Jobs' image without Docker and pushes it to
// the test registry; the registry then serves an image whose entrypoint is helm-drift, whose
// PATH finds it (the resumer Job's command is "helm-drift self resume ..."), that runs as a
// non-root user, and whose one layer holds the binary and the CA certificates.
func TestImage(t *testing.T) {
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	t.Parallel()
	ref := cluster.Registry + "/helm-drift:e2e"
	cmd := exec.Command("make", "image", "IMAGE="+ref, "INSECURE=1")
	cmd.Dir = repoRoot
	repoBin.Lock()
	out, err := cmd.CombinedOutput()
	repoBin.Unlock()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), ref+"@sha256:") {
		t.Errorf("make image did not print the digest:\n%s", out)
	}
	get := func(path, accept string, v any) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+cluster.Registry+"/v2/helm-drift/"+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, res.Status, b)
		}
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return b
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	get("manifests/e2e", "application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json", &manifest)
	var config struct {
		OS, Architecture string
		Config           struct {
			Entrypoint []string
			Env        []string
			User       string
		}
	}
	get("blobs/"+manifest.Config.Digest, "", &config)
	if got := fmt.Sprint(config.Config.Entrypoint); got != "[/usr/local/bin/helm-drift]" || config.OS != "linux" || config.Config.User == "" || config.Config.User == "0" {
		t.Errorf("image config: entrypoint %s, os %s, user %q", got, config.OS, config.Config.User)
	}
	if !strings.Contains(strings.Join(config.Config.Env, " "), "PATH=/usr/local/bin") {
		t.Errorf("image env %v: PATH does not find helm-drift", config.Config.Env)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(get("blobs/"+manifest.Layers[0].Digest, "", nil))))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.Size
	}
	if files["usr/local/bin/helm-drift"] < 1<<20 || files["etc/ssl/certs/ca-certificates.crt"] == 0 {
		t.Errorf("layer files %v: want the helm-drift binary and the CA bundle", files)
	}
}

// TestReleasedHookImage: a build stamped as a release (make image and make build with
// IMAGE_REPOSITORY) pushes its image as IMAGE_REPOSITORY:vVERSION, names it in "helm drift
// version", and renders the resumer Job from it when --self-hook-image is not given; the image
// it names is the one in the registry.
func TestReleasedHookImage(t *testing.T) {
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	t.Parallel()
	repo := cluster.Registry + "/released/helm-drift"
	bin := filepath.Join(t.TempDir(), "helm-drift")
	repoBin.Lock()
	defer repoBin.Unlock()
	for _, args := range [][]string{
		{"image", "IMAGE_REPOSITORY=" + repo, "INSECURE=1"},
		{"build", "IMAGE_REPOSITORY=" + repo, "BIN=" + bin},
	} {
		cmd := exec.Command("make", args...)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	want := repo + ":v"
	if err != nil || !strings.Contains(string(out), "image:    "+want) {
		t.Fatalf("helm-drift version of a released build: %v\n%s", err, out)
	}
	ref := strings.Fields(string(out)[strings.Index(string(out), "image:    ")+len("image:    "):])[0]
	input, err := os.ReadFile(filepath.Join(repoRoot, "testdata/render/self-job/input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "render", "--self", "--install", "--release=platform", "--namespace=flux-system",
		"--self-repository=oci://registry.example.internal/charts", "--kubeconfig=/nonexistent/kubeconfig", "--self-bracket=job")
	cmd.Stdin = strings.NewReader(string(input))
	rendered, err := cmd.Output()
	if err != nil || !strings.Contains(string(rendered), "image: "+ref) {
		t.Fatalf("render --self-bracket job without --self-hook-image: %v; want the Job's image %s", err, ref)
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	req, _ := http.NewRequest(http.MethodGet, "http://"+cluster.Registry+"/v2/released/helm-drift/manifests/"+tag, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the registry does not serve %s: %v %v", ref, err, res)
	}
	res.Body.Close()
}
