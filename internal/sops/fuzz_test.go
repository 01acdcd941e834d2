package sops

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecryptFile: whatever a file holds, read in any format, decrypting it never panics and
// never hangs; a YAML or JSON file that decrypts comes back as a file sops' store reads again.
// Seeded with the files the sops library encrypted (testdata/sops/order) and kustomize-controller's
// generator fixtures, decrypted with their key, so mutations reach the decryption and the
// writers, not only the readers.
func FuzzDecryptFile(f *testing.F) {
	for _, glob := range []string{"../../testdata/sops/order/encrypted.*", "../../testdata/sops/generator/*"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data, uint8(FormatForPath(p)))
			}
		}
	}
	ids, err := LoadIdentities("../../testdata/sops/age.agekey")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		in := Format(format % 5)
		out, err := DecryptFile(data, in, in, ids)
		if err != nil {
			return
		}
		switch in {
		case YAML:
			if _, err := loadYAML(out); err != nil {
				t.Fatalf("the decrypted YAML does not read again: %v\n%q", err, out)
			}
		case JSON:
			if !json.Valid(out) {
				t.Fatalf("the decrypted JSON is not JSON:\n%q", out)
			}
		}
	})
}
