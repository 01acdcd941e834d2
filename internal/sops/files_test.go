package sops

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestDecryptFile: the sops CLI's encrypted files of kustomize-controller's own generator
// tests (testdata/sops/generator: a binary file, a dotenv file, a binary file inside a
// Secret's value) decrypt to what its test expects of the Secrets made from them (key: value),
// told by their markers and written in the format their key names.
func TestDecryptFile(t *testing.T) {
	ids := keys(t, "age.agekey")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("../../testdata/sops/generator", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var inside struct{ Data map[string]string }
	if err := sigsyaml.Unmarshal(read("inside-secret.yaml"), &inside); err != nil {
		t.Fatal(err)
	}
	insideKey, err := base64.StdEncoding.DecodeString(inside.Data["key"])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		in, out  Format
		want     string
		detected Format
	}{
		{"files: key=file.txt", read("file.txt"), FormatForPath("key"), FormatForPath("key"), "value", JSON},
		{"envs: env.env", read("env.env"), Dotenv, Dotenv, "key=value\n", Dotenv},
		{"a Secret's value", insideKey, JSON, FormatForPath("key"), "value", JSON},
		{"envs: env.env, written as YAML", read("env.env"), Dotenv, YAML, "key: value\n", Dotenv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f, ok := Detect(tc.data); !ok || f != tc.detected {
				t.Errorf("Detect: %v %v, want %v", f, ok, tc.detected)
			}
			if !Encrypts(tc.data, tc.in) {
				t.Errorf("Encrypts(%v): false", tc.in)
			}
			got, err := DecryptFile(tc.data, tc.in, tc.out, ids)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if _, err := DecryptFile(tc.data, tc.in, tc.out, Identities{}); err == nil || !strings.Contains(err.Error(), "age") {
				t.Errorf("with no identity: %v, want an error naming the age recipients", err)
			}
		})
	}
	if _, ok := Detect([]byte("key=value\n")); ok {
		t.Error("Detect: a plain dotenv file is taken for an encrypted one")
	}
	// A metadata index that would ask for memory it does not hold is refused, named, in
	// either flattened format.
	for _, c := range []struct {
		data string
		f    Format
	}{
		{"KEY=ENC[x]\nsops_age__list_2000000000__map_enc=x\n", Dotenv},
		{"[sops]\nage__list_-1__map_enc = x\n", INI},
	} {
		if _, err := DecryptFile([]byte(c.data), c.f, c.f, ids); err == nil || !strings.Contains(err.Error(), "entries are read") {
			t.Errorf("%s: %v, want the index refused", c.f, err)
		}
	}
	// Aliases that would expand beyond reason, in a second document (sops' own first pass reads
	// the first one only): refused by the decoder, never expanded.
	bomb := "a: 1\n---\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i < 9; i++ {
		bomb += fmt.Sprintf("l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if _, err := DecryptFile([]byte(bomb), YAML, YAML, ids); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("aliases expanding to 10^9 values: %v, want them refused", err)
	}
	if _, err := DecryptFile([]byte("[sops]\n"), INI, INI, ids); err == nil || !strings.Contains(err.Error(), "no sops metadata") {
		t.Errorf("an INI file of an empty sops section: %v, want it refused, named", err)
	}
}

// TestDecryptFileAsSops: a YAML, a JSON, a dotenv and an INI file that the sops library (v3.13.2, as
// kustomize-controller v1.9.6 builds it) encrypted, decrypt byte for byte to what that library
// writes when kustomize-controller decrypts them (testdata/sops/order, made by
// testdata/sops/sopsgen): the keys in the file's order, comments kept where sops puts them,
// quoting, indent, anchors resolved, numbers, booleans, times and nulls as sops types them.
func TestDecryptFileAsSops(t *testing.T) {
	ids := keys(t, "age.agekey")
	for _, ext := range []string{"yaml", "json", "env", "ini"} {
		t.Run(ext, func(t *testing.T) {
			read := func(name string) []byte {
				data, err := os.ReadFile(filepath.Join("../../testdata/sops/order", name+"."+ext))
				if err != nil {
					t.Fatal(err)
				}
				return data
			}
			f := FormatForPath("x." + ext)
			got, err := DecryptFile(read("encrypted"), f, f, ids)
			if err != nil {
				t.Fatal(err)
			}
			if want := read("decrypted"); string(got) != string(want) {
				t.Errorf("got\n%s\nwant (sops)\n%s", got, want)
			}
		})
	}
}
