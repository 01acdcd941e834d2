package fluxtree

import (
	"fmt"

	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// kustomizeBuild builds the kustomization in dir as kustomize-controller does, through
// fluxcd/pkg/kustomize: the files of src only (no remote bases), loads from outside dir allowed,
// builtin plugins only, a panic of kustomize's returned as an error; kfile is the kustomization
// file the Flux generator made from the Kustomization's spec (manifest, its content), which the
// build reads in place of the one on disk; decrypted holds the decrypted secretGenerator sources
// (absolute paths, see decryptSources), read in place of theirs. They are written in memory over
// src's files, never to disk: the build neither copies the tree nor changes it. The caller holds
// buildMu.
//
// One difference with fluxcd/pkg/kustomize's SecureBuild, in cost only: it resets kyaml's
// global OpenAPI schema before and after every build, so that a kustomization's own schema
// (its openapi field) never leaks into the next build; the reset makes every build parse the
// builtin schema again (about 50 ms of CPU, more than the build of a Kustomization of a few
// files). Here the builtin schema is loaded once and kept, and reset only after a build that
// set a schema of its own: every build starts from the builtin schema, as under SecureBuild.
// xref: fluxcd/pkg/kustomize kustomize_generator.go SecureBuild, Build; filesys MakeFsInMemory.
func kustomizeBuild(src, dir, kfile string, manifest []byte, decrypted map[string][]byte) (res resmap.ResMap, err error) {
	disk, err := securefs.MakeFsOnDiskSecure(src)
	if err != nil {
		return nil, err
	}
	fs := securefs.MakeFsInMemory(disk)
	if err := fs.WriteFile(kfile, manifest); err != nil {
		return nil, err
	}
	for p, data := range decrypted {
		if err := fs.WriteFile(p, data); err != nil {
			return nil, err
		}
	}
	// The builtin schema loaded first (parsed once a process, not once a build), so that a
	// kustomization's own schema adds to it, as SecureBuild preloads it.
	loadBuiltinSchema()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
		if openapi.GetSchemaVersion() != builtinSchema {
			openapi.ResetOpenAPI()
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	return k.Run(fs, dir)
}

// builtinSchema is what kyaml reports as its schema when no kustomization has set one: the
// builtin Kubernetes schema's version.
var builtinSchema = openapi.GetSchemaVersion()

// Prepare loads what the builds of any tree need, kustomize's builtin OpenAPI schema (about
// 50 ms of CPU), so that a caller can have it loaded while it does other work, such as reading
// the revisions it will Load. Load does it itself when it has not been done.
func Prepare() {
	buildMu.Lock()
	defer buildMu.Unlock()
	loadBuiltinSchema()
}

// loadBuiltinSchema makes kyaml's global schema the builtin one, parsed (once, unless a
// build's own schema was reset since). The caller holds buildMu.
func loadBuiltinSchema() {
	if openapi.GetSchemaVersion() != builtinSchema {
		openapi.ResetOpenAPI()
	}
	_ = openapi.Schema()
}
