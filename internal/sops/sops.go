// Package sops decrypts SOPS-encrypted Kubernetes objects with age identities, as
// kustomize-controller's decryptor does after a Kustomization's build when its
// spec.decryption.provider is sops: each value SOPS encrypted (AES-256-GCM, its path as
// additional data) decrypted with the file's data key, which one of the identities opens from
// the file's age entries; the sops metadata removed. DecryptFile does the same for a file
// (YAML, JSON, INI, dotenv, binary) that a secretGenerator reads or a Secret's value holds. Like
// kustomize-controller by default, it does not check the file's MAC. Age and OpenPGP keys are
// read (not KMS or Vault).
// xref: getsops/sops v3 aes/cipher.go Decrypt, sops.go Tree.Decrypt, age/keysource.go;
// fluxcd/kustomize-controller internal/decryptor/decryptor.go DecryptResource.
package sops

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
)

// Identities are the keys a run decrypts with: age identities and OpenPGP private keys, as a
// Kustomization's decryption Secret holds them (*.agekey, *.asc).
type Identities struct {
	Age []age.Identity
	PGP openpgp.EntityList
}

// Empty reports whether there is no key at all: nothing is then decrypted.
func (ids Identities) Empty() bool { return len(ids.Age) == 0 && len(ids.PGP) == 0 }

// LoadIdentities reads age identities as sops does: the file named by file, else the file
// named by $SOPS_AGE_KEY_FILE, and the keys in $SOPS_AGE_KEY. None is not an error: the
// caller then decrypts nothing. LoadPGP reads the OpenPGP keys.
func LoadIdentities(file string) (Identities, error) {
	var ids Identities
	read := func(where string, r io.Reader) error {
		got, err := age.ParseIdentities(r)
		if err != nil {
			return fmt.Errorf("%s: %w (want age identities, AGE-SECRET-KEY-1... lines)", where, err)
		}
		ids.Age = append(ids.Age, got...)
		return nil
	}
	if file == "" {
		file = os.Getenv("SOPS_AGE_KEY_FILE")
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return Identities{}, fmt.Errorf("age key file: %w", err)
		}
		defer f.Close()
		if err := read(file, f); err != nil {
			return Identities{}, err
		}
	}
	if k := os.Getenv("SOPS_AGE_KEY"); k != "" {
		if err := read("$SOPS_AGE_KEY", strings.NewReader(k)); err != nil {
			return Identities{}, err
		}
	}
	return ids, nil
}

// Encrypted reports whether obj is SOPS-encrypted (its top-level sops metadata).
func Encrypted(obj map[string]any) bool {
	m, ok := obj["sops"].(map[string]any)
	return ok && m != nil
}

// Decrypt returns a copy of the SOPS-encrypted obj with each encrypted value decrypted and the
// sops metadata removed. Its errors never hold a value.
func Decrypt(obj map[string]any, ids Identities) (map[string]any, error) {
	meta, _ := obj["sops"].(map[string]any)
	if meta == nil {
		return nil, errors.New("not SOPS-encrypted: no sops metadata")
	}
	key, err := dataKey(meta, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k == "sops" {
			continue
		}
		if out[k], err = decryptValue(v, []string{k}, key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dataKey opens the file's data key with the first key given that one of its entries was
// encrypted for: its age entries first, then its pgp ones, in sops' order.
// xref: getsops/sops v3 keyservice DefaultDecryptionOrder.
func dataKey(meta map[string]any, ids Identities) ([]byte, error) {
	entries, _ := meta["age"].([]any)
	var recipients []string
	for _, e := range entries {
		em, _ := e.(map[string]any)
		enc, _ := em["enc"].(string)
		r, _ := em["recipient"].(string)
		recipients = append(recipients, r)
		if enc == "" || len(ids.Age) == 0 {
			continue
		}
		dec, err := age.Decrypt(armor.NewReader(strings.NewReader(enc)), ids.Age...)
		if err != nil {
			continue
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, dec); err != nil {
			return nil, fmt.Errorf("reading the data key age decrypts: %w", err)
		}
		return b.Bytes(), nil
	}
	pgpEntries, _ := meta["pgp"].([]any)
	key, fingerprints, err := pgpDataKey(pgpEntries, ids.PGP)
	if err != nil || key != nil {
		return key, err
	}
	var mine []string
	for _, r := range recipients {
		mine = append(mine, "age "+r)
	}
	for _, fp := range fingerprints {
		mine = append(mine, "PGP "+fp)
	}
	if len(mine) == 0 {
		var kinds []string
		for _, k := range []string{"kms", "gcp_kms", "azure_kv", "hc_vault"} {
			if l, _ := meta[k].([]any); len(l) > 0 {
				kinds = append(kinds, k)
			}
		}
		sort.Strings(kinds)
		return nil, fmt.Errorf("encrypted for no age or PGP key (%s): only age and PGP keys are read", strings.Join(kinds, ", "))
	}
	if ids.Empty() {
		return nil, fmt.Errorf("encrypted for %s: give one's private key (--sops-age-key-file, $SOPS_AGE_KEY_FILE, $SOPS_AGE_KEY or --sops-pgp-key-file)", strings.Join(mine, ", "))
	}
	return nil, fmt.Errorf("none of the keys given opens it (encrypted for %s)", strings.Join(mine, ", "))
}

// decryptValue decrypts the encrypted strings in v, at path (its keys from the root; a list's
// items share their list's path, as in sops).
func decryptValue(v any, path []string, key []byte) (any, error) {
	switch v := v.(type) {
	case string:
		if !encrypted.MatchString(v) {
			return v, nil
		}
		return decryptString(v, key, strings.Join(path, ":")+":")
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			d, err := decryptValue(e, append(path[:len(path):len(path)], k), key)
			if err != nil {
				return nil, err
			}
			out[k] = d
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && encrypted.MatchString(s) && strings.HasSuffix(s, ",type:comment]") {
				// A list's comment, which sops writes as an item of its own: a comment again
				// once decrypted, gone from the object.
				continue
			}
			d, err := decryptValue(e, path, key)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	return v, nil
}

// encrypted is sops' format of an encrypted value.
var encrypted = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// decryptString decrypts one value; additionalData is its path ("stringData:password:").
func decryptString(value string, key []byte, additionalData string) (any, error) {
	s, typ, err := decryptTyped(value, key, additionalData)
	if err != nil {
		return nil, err
	}
	return scalar(s, typ, additionalData)
}

// decryptTyped decrypts one value (or comment) to its plaintext and sops' type of it.
func decryptTyped(value string, key []byte, additionalData string) (plain, typ string, err error) {
	m := encrypted.FindStringSubmatch(value)
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return "", "", fmt.Errorf("%s: not sops' format (%v)", strings.TrimSuffix(additionalData, ":"), err)
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", "", err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return "", "", err
	}
	out, err := gcm.Open(nil, iv, append(data, tag...), []byte(additionalData))
	if err != nil {
		return "", "", fmt.Errorf("%s: the data key does not open it (the file was changed after it was encrypted, or the value moved)", strings.TrimSuffix(additionalData, ":"))
	}
	return string(out), m[4], nil
}

// scalar is a decrypted value of sops' type typ, as an object holds it (a time as its text).
func scalar(s, typ, additionalData string) (any, error) {
	switch typ {
	case "str", "bytes", "time":
		return s, nil
	case "int":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: an int that does not parse", strings.TrimSuffix(additionalData, ":"))
		}
		return n, nil
	case "float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: a float that does not parse", strings.TrimSuffix(additionalData, ":"))
		}
		return f, nil
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%s: a bool that does not parse", strings.TrimSuffix(additionalData, ":"))
		}
		return b, nil
	default:
		return nil, fmt.Errorf("%s: unknown sops type %q", strings.TrimSuffix(additionalData, ":"), typ)
	}
}
