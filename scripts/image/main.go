// Command image builds the container image the self-management Jobs run (the resumer): the
// static helm-drift binary and the machine's CA certificates on an empty base, nothing
// downloaded, no Docker; it pushes it to a registry and prints its digest. Reproducible: the
// same binary and certificates give the same digest (fixed file times, fixed creation time).
//
//	go run . -binary ../../bin/linux-amd64/helm-drift -ref 127.0.0.1:5000/helm-drift:v0.1.0 -insecure
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	binary := flag.String("binary", "", "the static linux helm-drift binary to put at /usr/local/bin/helm-drift")
	ca := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put at /etc/ssl/certs/ca-certificates.crt")
	ref := flag.String("ref", "", "where to push: host[:port]/repository:tag")
	insecure := flag.Bool("insecure", false, "the registry speaks plain HTTP")
	arch := flag.String("arch", "amd64", "the binary's architecture")
	flag.Parse()
	if *binary == "" || *ref == "" {
		fmt.Fprintln(os.Stderr, "image: want -binary and -ref")
		os.Exit(2)
	}
	digest, err := build(*binary, *ca, *ref, *arch, *insecure)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s@%s\n", *ref, digest)
}

// epoch is every file's and the image's time: the digest depends on the contents only.
var epoch = time.Unix(0, 0).UTC()

func build(binary, ca, ref, arch string, insecure bool) (v1.Hash, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, dir := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/local/", "usr/local/bin/", "tmp/"} {
		mode := int64(0o755)
		if dir == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: mode, ModTime: epoch}); err != nil {
			return v1.Hash{}, err
		}
	}
	for _, f := range []struct {
		src, dst string
		mode     int64
	}{{binary, "usr/local/bin/helm-drift", 0o755}, {ca, "etc/ssl/certs/ca-certificates.crt", 0o644}} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return v1.Hash{}, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.dst, Mode: f.mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return v1.Hash{}, err
		}
		if _, err := tw.Write(data); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return v1.Hash{}, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/usr/local/bin/helm-drift"}
	cf.Config.Env = []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/tmp"}
	cf.Config.User = "65532:65532"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return v1.Hash{}, err
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("-ref %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	return img.Digest()
}
