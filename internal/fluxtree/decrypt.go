package fluxtree

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/sops"
)

// sopsDecryption reports whether Kustomization k asks for SOPS decryption
// (spec.decryption.provider: sops).
func sopsDecryption(k ksRef) bool {
	spec, _ := k.obj["spec"].(map[string]any)
	dec, _ := spec["decryption"].(map[string]any)
	return str(dec, "provider") == "sops"
}

// decrypt decrypts r in place as kustomize-controller does after the build, when the
// Kustomization k asks for SOPS decryption and identities were given: an object SOPS encrypted
// whole, or a Secret whose values are files sops encrypted (told by their markers, written in
// the format their key names); it reports whether it did. An object k does not decrypt stays as
// written (kustomize-controller would apply it so).
// xref: kustomize-controller internal/decryptor/decryptor.go DecryptResource.
func (b *builder) decrypt(k ksRef, r *resource.Resource) (bool, error) {
	if b.opts.SOPS.Empty() || !sopsDecryption(k) {
		return false, nil
	}
	m, err := r.Map()
	if err != nil {
		return false, err
	}
	if !sops.Encrypted(m) {
		return b.decryptValues(r)
	}
	plain, err := sops.Decrypt(m, b.opts.SOPS)
	if err != nil {
		return false, fmt.Errorf("SOPS: %w", err)
	}
	data, err := json.Marshal(plain)
	if err != nil {
		return false, err
	}
	return true, r.UnmarshalJSON(data)
}

// decryptValues decrypts the values of Secret r that are files sops encrypted.
func (b *builder) decryptValues(r *resource.Resource) (bool, error) {
	if r.GetKind() != "Secret" {
		return false, nil
	}
	data := r.GetDataMap()
	done := false
	for key, value := range data {
		raw, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue // kustomize-controller leaves it to the apply to refuse
		}
		in, ok := sops.Detect(raw)
		if !ok {
			continue
		}
		out, err := sops.DecryptFile(raw, in, sops.FormatForPath(key), b.opts.SOPS)
		if err != nil {
			return false, fmt.Errorf("SOPS: value %s: %w", key, err)
		}
		data[key], done = base64.StdEncoding.EncodeToString(out), true
	}
	if done {
		r.SetDataMap(data)
	}
	return done, nil
}

// encryptedValues reports whether Secret obj holds a value sops encrypted that was not
// decrypted: a file (its marker), or an encrypted dotenv file's entries (a secretGenerator's envs
// source: its sops_mac entry). A ConfigMap is not asked: kustomize-controller decrypts no
// ConfigMap's values (a configMapGenerator sees a file decrypted only when a secretGenerator
// names it too).
func encryptedValues(obj map[string]any) bool {
	if str(obj, "kind") != "Secret" {
		return false
	}
	data, _ := obj["data"].(map[string]any)
	for key, v := range data {
		if key == "sops_mac" {
			return true
		}
		s, _ := v.(string)
		if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
			if _, ok := sops.Detect(raw); ok {
				return true
			}
		}
	}
	return false
}

// decryptSources decrypts the secretGenerator sources (files and envs) and patch files that
// the kustomization in dir and those it reaches through resources and components name, where
// sops encrypted them, as kustomize-controller does before the build when Kustomization k asks
// for SOPS decryption and identities were given. manifest is dir's kustomization file (the
// generator's). It returns the decrypted files by absolute path; a path outside src is
// left alone.
// xref: kustomize-controller internal/decryptor/decryptor.go DecryptSources,
// decryptKustomizationSources, recurseKustomizationFiles.
func (b *builder) decryptSources(k ksRef, src, dir string, manifest []byte) (map[string][]byte, error) {
	if b.opts.SOPS.Empty() || !sopsDecryption(k) {
		return nil, nil
	}
	out := map[string][]byte{}
	visited := map[string]bool{}
	inside := func(p string) bool {
		rel, err := filepath.Rel(src, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	decryptFile := func(kdir, ref string, f sops.Format) error {
		p := ref
		if !filepath.IsAbs(p) {
			p = filepath.Join(kdir, p)
		}
		if !inside(p) || out[p] != nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || !sops.Encrypts(data, f) {
			return nil // kustomize's build names a file it cannot read
		}
		plain, err := sops.DecryptFile(data, f, f, b.opts.SOPS)
		if err != nil {
			rel, _ := filepath.Rel(src, p)
			return fmt.Errorf("SOPS: %s: %w", filepath.ToSlash(rel), err)
		}
		out[p] = plain
		return nil
	}
	var visit func(kdir string, kdata []byte) error
	visit = func(kdir string, kdata []byte) error {
		if visited[kdir] {
			return nil
		}
		visited[kdir] = true
		var kus kustypes.Kustomization
		if err := sigsyaml.Unmarshal(kdata, &kus); err != nil {
			return nil // kustomize's build names it
		}
		kus.FixKustomization()
		for _, gen := range kus.SecretGenerator {
			for _, source := range gen.FileSources {
				key, file, ok := strings.Cut(source, "=")
				if !ok {
					file = key
				}
				if err := decryptFile(kdir, file, sops.FormatForPath(key)); err != nil {
					return err
				}
			}
			for _, env := range gen.EnvSources {
				f := sops.FormatForPath(env)
				if f == sops.Binary {
					f = sops.Dotenv
				}
				if err := decryptFile(kdir, env, f); err != nil {
					return err
				}
			}
		}
		for _, p := range kus.Patches {
			if p.Path != "" && !strings.Contains(p.Path, "://") {
				if err := decryptFile(kdir, p.Path, sops.FormatForPath(p.Path)); err != nil {
					return err
				}
			}
		}
		for _, res := range append(kus.Resources, kus.Components...) {
			sub := res
			if !filepath.IsAbs(sub) {
				sub = filepath.Join(kdir, sub)
			}
			if !inside(sub) {
				continue
			}
			if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
				continue
			}
			for _, name := range kustomizationFiles {
				if data, err := os.ReadFile(filepath.Join(sub, name)); err == nil {
					if err := visit(sub, data); err != nil {
						return err
					}
					break
				}
			}
		}
		return nil
	}
	if err := visit(dir, manifest); err != nil {
		return nil, err
	}
	return out, nil
}
