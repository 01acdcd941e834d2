package fluxtree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// kustomizeBuild builds the kustomization in dir as kustomize-controller does, through
// fluxcd/pkg/kustomize: the files of src, loads from outside dir allowed, builtin plugins only,
// a panic of kustomize's returned as an error; remote bases (git URLs, cloned into a temporary
// directory) fetched when remoteBases (kustomize-controller's default), refused otherwise (its
// --no-remote-bases), remote files fetched in any case, as kustomize loads them. kfile is the
// kustomization file the Flux generator made from the Kustomization's spec (manifest, its
// content), which the build reads in place of the one on disk; decrypted holds the decrypted
// secretGenerator sources (absolute paths, see decryptSources), read in place of theirs. They
// are written in memory over src's files, never to disk: the build neither copies the tree nor
// changes it. tr, when set, records what the build reads (see tracedbuilds.go). The caller
// holds buildMu.
//
// One difference with fluxcd/pkg/kustomize's SecureBuild, in cost only: it resets kyaml's
// global OpenAPI schema before and after every build, so that a kustomization's own schema
// (its openapi field) never leaks into the next build; the reset makes every build parse the
// builtin schema again (about 50 ms of CPU, more than the build of a Kustomization of a few
// files). Here the builtin schema is loaded once and kept, and reset only after a build that
// set a schema of its own: every build starts from the builtin schema, as under SecureBuild.
// xref: fluxcd/pkg/kustomize kustomize_generator.go SecureBuild, Build; filesys MakeFsInMemory;
// kustomize-controller internal/controller/kustomization_controller.go build (NoRemoteBases).
func kustomizeBuild(src, dir, kfile string, manifest []byte, decrypted map[string][]byte, remoteBases bool, tr *fsTrace) (res resmap.ResMap, err error) {
	// The builtin schema loaded first (parsed once a process, not once a build), so that a
	// kustomization's own schema adds to it, as SecureBuild preloads it.
	loadBuiltinSchema()
	return kustomizeRun(src, dir, kfile, manifest, decrypted, remoteBases, tr)
}

// kustomizeRun is kustomizeBuild without loading the builtin schema first: for a kustomization
// that sets no schema of its own (its openapi field), whose build then reads the builtin schema,
// if at all, as kyaml loads it when first asked. tr, when set, records what the build reads
// (see tracedbuilds.go). The caller holds buildMu.
func kustomizeRun(src, dir, kfile string, manifest []byte, decrypted map[string][]byte, remoteBases bool, tr *fsTrace) (res resmap.ResMap, err error) {
	fs, err := buildFS(src, kfile, manifest, decrypted, remoteBases)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		fs = &tracingFS{FileSystem: fs, t: tr}
	}
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

// buildFS is the file system a build reads: src's files (securely: nothing outside it; remote
// bases cloned when remoteBases), with the kustomization file kfile (manifest) and the
// decrypted sources written over them in memory.
func buildFS(src, kfile string, manifest []byte, decrypted map[string][]byte, remoteBases bool) (filesys.FileSystem, error) {
	disk, err := securefs.MakeFsOnDiskSecure(src)
	if remoteBases {
		disk, err = securefs.MakeFsOnDiskSecureBuild(src)
	}
	if err != nil {
		return nil, err
	}
	fs := cleaningFS{securefs.MakeFsInMemory(disk)}
	if err := fs.WriteFile(kfile, manifest); err != nil {
		return nil, err
	}
	for p, data := range decrypted {
		if err := fs.WriteFile(p, data); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// cleaningFS is a build's file system (fluxcd/pkg/kustomize's in-memory layer over the tree),
// whose RemoveAll also removes from the disk kustomize's temporary directories: the clone of a
// remote base, which kustomize removes once built (or refused) and the in-memory layer would
// only forget. Nothing else is ever removed from the disk.
type cleaningFS struct {
	filesys.FileSystem
}

// RemoveAll removes path from the in-memory layer, and from the disk when it is one of
// kustomize's temporary directories.
func (f cleaningFS) RemoveAll(path string) error {
	err := f.FileSystem.RemoveAll(path)
	clean := filepath.Clean(path)
	if tmp, terr := securefs.TmpConfirmedDirPrefix(); terr == nil && strings.HasPrefix(clean, tmp) && !strings.Contains(clean[len(tmp):], string(filepath.Separator)) {
		return os.RemoveAll(clean)
	}
	return err
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
