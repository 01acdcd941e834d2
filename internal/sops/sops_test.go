package sops

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// load reads a Secret of testdata/sops (written by the sops CLI, from kustomize-controller's
// own tests).
func load(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/sops", name))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := sigsyaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDecrypt(t *testing.T) {
	for _, c := range []struct{ file, key string }{
		{"age.yaml", "age.agekey"},       // X25519
		{"age-pq.yaml", "age-pq.agekey"}, // post-quantum (ML-KEM-768 + X25519)
		{"pgp.yaml", "pgp.asc"},          // OpenPGP (RSA-4096)
	} {
		t.Run(c.file, func(t *testing.T) {
			ids := keys(t, c.key)
			obj := load(t, c.file)
			if !Encrypted(obj) {
				t.Fatal("not seen as encrypted")
			}
			out, err := Decrypt(obj, ids)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := out["sops"]; ok {
				t.Error("the sops metadata is left in")
			}
			sd, _ := out["stringData"].(map[string]any)
			if sd["key"] != "value" {
				t.Errorf("stringData.key: %q, want value", sd["key"])
			}
			md, _ := out["metadata"].(map[string]any)
			if out["kind"] != "Secret" || md["name"] == nil {
				t.Errorf("the unencrypted fields changed: %v", out)
			}
			if !strings.HasPrefix(obj["stringData"].(map[string]any)["key"].(string), "ENC[") {
				t.Error("Decrypt changed the object it was given")
			}
		})
	}
}

// keys reads a key of testdata/sops: age identities (*.agekey) or OpenPGP keys (*.asc), with
// no key from the environment.
func keys(t *testing.T, name string) Identities {
	t.Helper()
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")
	file := filepath.Join(golden.RepoRoot(), "testdata/sops", name)
	if filepath.Ext(name) == ".asc" {
		ring, err := LoadPGP([]string{file})
		if err != nil {
			t.Fatal(err)
		}
		return Identities{PGP: ring}
	}
	ids, err := LoadIdentities(file)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// Each failure says why and decrypts nothing.
func TestDecryptRefuses(t *testing.T) {
	ids := keys(t, "age.agekey")
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	tampered := load(t, "age.yaml")
	tampered["metadata"].(map[string]any)["name"] = "age"
	enc := tampered["stringData"].(map[string]any)["key"].(string)
	// Move the value: its path is its additional data, so it no longer opens.
	tampered["stringData"] = map[string]any{"other": enc}
	for _, c := range []struct {
		name string
		obj  map[string]any
		ids  Identities
		want string
	}{
		{"no identity", load(t, "age.yaml"), Identities{}, "encrypted for age age1"},
		{"no key for PGP", load(t, "pgp.yaml"), Identities{}, "encrypted for PGP 35C1A64CD7FC0AB6EB66756B2445463C3234ECE1: give one's private key"},
		{"an age key for PGP", load(t, "pgp.yaml"), ids, "none of the keys given opens it (encrypted for PGP 35C1A64CD7FC0AB6EB66756B2445463C3234ECE1)"},
		{"a PGP key for age", load(t, "age.yaml"), keys(t, "pgp.asc"), "none of the keys given opens it (encrypted for age age1"},
		{"another identity", load(t, "age.yaml"), Identities{Age: []age.Identity{other}}, "none of the keys given opens it"},
		{"a value moved", tampered, ids, "stringData:other: the data key does not open it"},
		{"not encrypted", map[string]any{"kind": "Secret"}, ids, "no sops metadata"},
	} {
		_, err := Decrypt(c.obj, c.ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}

	// $SOPS_AGE_KEY holds the keys themselves.
	key, _ := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/sops/age.agekey"))
	t.Setenv("SOPS_AGE_KEY", string(key))
	fromEnv, err := LoadIdentities("")
	if err != nil || len(fromEnv.Age) != 1 {
		t.Fatalf("$SOPS_AGE_KEY: %d identities, %v", len(fromEnv.Age), err)
	}
	if _, err := LoadIdentities(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "age key file") {
		t.Errorf("a missing key file: %v", err)
	}
}

// LoadPGP takes private keys only, unprotected, as kustomize-controller can use them; each
// refusal names the file and the key. A binary export (no --armor) is read as gpg --import reads
// it.
func TestLoadPGPRefuses(t *testing.T) {
	ring := keys(t, "pgp.asc")
	dir := t.TempDir()
	var bin bytes.Buffer
	if err := ring.PGP[0].SerializePrivateWithoutSigning(&bin, nil); err != nil {
		t.Fatal(err)
	}
	binFile := filepath.Join(dir, "binary.gpg")
	if err := os.WriteFile(binFile, bin.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadPGP([]string{binFile}); err != nil || len(got) != 1 {
		t.Errorf("a binary export: %d keys, %v; want the key", len(got), err)
	} else if _, err := Decrypt(load(t, "pgp.yaml"), Identities{PGP: got}); err != nil {
		t.Errorf("decrypting with the key of a binary export: %v", err)
	}
	write := func(name string, serialize func(io.Writer) error) string {
		var b bytes.Buffer
		w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := serialize(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	public := write("public.asc", ring.PGP[0].Serialize)
	protected, err := openpgp.NewEntity("t", "", "t@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := protected.EncryptPrivateKeys([]byte("passphrase"), nil); err != nil {
		t.Fatal(err)
	}
	locked := write("locked.asc", func(w io.Writer) error { return protected.SerializePrivateWithoutSigning(w, nil) })
	garbage := filepath.Join(dir, "garbage.asc")
	if err := os.WriteFile(garbage, []byte("AGE-SECRET-KEY-1XYZ\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{public, "public.asc: key 35C1A64CD7FC0AB6EB66756B2445463C3234ECE1 is a public key"},
		{locked, "locked.asc: key " + fmt.Sprintf("%X", protected.PrimaryKey.Fingerprint) + " is protected by a passphrase"},
		{garbage, "garbage.asc: "},
		{filepath.Join(dir, "missing.asc"), "PGP key file: "},
	} {
		if _, err := LoadPGP([]string{c.file}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", filepath.Base(c.file), err, c.want)
		}
	}
}

// A comment sops encrypted inside a list is written as an item of its own; decrypted, the
// object's list holds the other items only, as kustomize-controller reads it back.
func TestDecryptListComment(t *testing.T) {
	ids := keys(t, "age.agekey")
	data, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/sops/order/encrypted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := sigsyaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if n := len(obj["steps"].([]any)); n != 5 {
		t.Fatalf("the fixture's encrypted steps: %d items, want 5 (two values, three comments)", n)
	}
	out, err := Decrypt(obj, ids)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out["steps"]); got != "[one two]" {
		t.Errorf("steps %s, want [one two]", got)
	}
}
