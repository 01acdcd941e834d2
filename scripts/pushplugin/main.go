// Command pushplugin pushes Helm 4 plugin tarballs (NAME-VERSION.tgz with its NAME-VERSION.tgz.prov)
// to an OCI registry as Helm plugin artifacts, as "helm plugin install oci://REGISTRY/NAME
// --version VERSION" reads them: an OCI 1.1 manifest of artifact type
// application/vnd.helm.plugin.v1+json whose layers are the tarball and its provenance, each
// named by its file name. Run by make push-plugin.
// xref: Helm v4 pkg/registry/plugin.go (PluginArtifactType, processPluginPull).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
)

const pluginArtifactType = "application/vnd.helm.plugin.v1+json"

func main() {
	registry := flag.String("registry", "", "oci://host/path the plugins go to (NAME:VERSION under it)")
	dir := flag.String("dir", "dist", "where make dist wrote the plugin tarballs")
	version := flag.String("version", "", "the version, x.y.z")
	plainHTTP := flag.Bool("plain-http", false, "the registry speaks plain HTTP")
	plugins := flag.String("plugins", "drift,drift-render", "the plugins to push")
	flag.Parse()
	if err := run(*registry, *dir, strings.TrimPrefix(*version, "v"), *plainHTTP, strings.Split(*plugins, ",")); err != nil {
		fmt.Fprintf(os.Stderr, "pushplugin: %v\n", err)
		os.Exit(1)
	}
}

func run(registry, dir, version string, plainHTTP bool, plugins []string) error {
	if !strings.HasPrefix(registry, "oci://") || version == "" {
		return fmt.Errorf("want -registry oci://host/path and -version x.y.z (make push-plugin REGISTRY=oci://... VERSION=...)")
	}
	base := strings.TrimSuffix(strings.TrimPrefix(registry, "oci://"), "/")
	ctx := context.Background()
	for _, name := range plugins {
		store := memory.New()
		var layers []ocispec.Descriptor
		for _, f := range []struct{ file, mediaType string }{
			{name + "-" + version + ".tgz", "application/vnd.oci.image.layer.v1.tar+gzip"},
			{name + "-" + version + ".tgz.prov", "application/vnd.oci.image.layer.v1.tar"},
		} {
			data, err := os.ReadFile(filepath.Join(dir, f.file))
			if err != nil {
				return fmt.Errorf("%w (make dist with SIGN_KEY writes it)", err)
			}
			desc := ocispec.Descriptor{MediaType: f.mediaType, Digest: digest.FromBytes(data), Size: int64(len(data)),
				Annotations: map[string]string{ocispec.AnnotationTitle: f.file}}
			if err := store.Push(ctx, desc, strings.NewReader(string(data))); err != nil {
				return err
			}
			layers = append(layers, desc)
		}
		manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, pluginArtifactType, oras.PackManifestOptions{Layers: layers})
		if err != nil {
			return err
		}
		if err := store.Tag(ctx, manifest, version); err != nil {
			return err
		}
		repo, err := remote.NewRepository(base + "/" + name)
		if err != nil {
			return err
		}
		repo.PlainHTTP = plainHTTP
		got, err := oras.Copy(ctx, store, version, repo, version, oras.DefaultCopyOptions)
		if err != nil {
			return fmt.Errorf("push %s/%s:%s: %w", base, name, version, err)
		}
		fmt.Printf("oci://%s/%s:%s@%s\n", base, name, version, got.Digest)
	}
	return nil
}
