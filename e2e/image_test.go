package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
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
	ref := cluster.Registry + "/helm-drift:e2e"
	cmd := exec.Command("make", "image", "IMAGE="+ref, "INSECURE=1")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
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
