package sops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
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
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Setenv("SOPS_AGE_KEY_FILE", "")
			t.Setenv("SOPS_AGE_KEY", "")
			ids, err := LoadIdentities(filepath.Join(golden.RepoRoot(), "testdata/sops", c.key))
			if err != nil {
				t.Fatal(err)
			}
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

// Each failure says why and decrypts nothing.
func TestDecryptRefuses(t *testing.T) {
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")
	ids, err := LoadIdentities(filepath.Join(golden.RepoRoot(), "testdata/sops/age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
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
		{"no identity", load(t, "age.yaml"), nil, "give one's identity"},
		{"another identity", load(t, "age.yaml"), Identities{other}, "none of the age identities given opens it"},
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
	if err != nil || len(fromEnv) != 1 {
		t.Fatalf("$SOPS_AGE_KEY: %d identities, %v", len(fromEnv), err)
	}
	if _, err := LoadIdentities(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "age key file") {
		t.Errorf("a missing key file: %v", err)
	}
}
