package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// LoadPGP reads OpenPGP private keys (gpg --export-secret-keys --armor, the *.asc entries of a
// Kustomization's decryption Secret; a binary export too), each file holding one or more. A key
// protected by a passphrase is refused: kustomize-controller imports its keys in batch mode,
// with no passphrase to give, and so cannot use one either.
func LoadPGP(files []string) (openpgp.EntityList, error) {
	var ring openpgp.EntityList
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("PGP key file: %w", err)
		}
		got, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
		if err != nil {
			// gpg --import takes a binary export too (no --armor), and so does this.
			if bin, berr := openpgp.ReadKeyRing(bytes.NewReader(data)); berr == nil && len(bin) > 0 {
				got, err = bin, nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w (want OpenPGP private keys, as gpg --export-secret-keys --armor writes them)", file, err)
		}
		for _, e := range got {
			if e.PrivateKey == nil {
				return nil, fmt.Errorf("%s: key %X is a public key: give its private key", file, e.PrimaryKey.Fingerprint)
			}
			if e.PrivateKey.Encrypted {
				return nil, fmt.Errorf("%s: key %X is protected by a passphrase: give it unprotected, as kustomize-controller's decryption Secret holds it", file, e.PrimaryKey.Fingerprint)
			}
		}
		ring = append(ring, got...)
	}
	return ring, nil
}

// pgpDataKey opens the data key from one of the file's pgp entries (its enc, an armored PGP
// message) with ring, as sops does through OpenPGP; ok false when no key of ring opens one.
// xref: getsops/sops v3 pgp/keysource.go decryptWithOpenPGP.
func pgpDataKey(entries []any, ring openpgp.EntityList) (key []byte, fingerprints []string, err error) {
	for _, e := range entries {
		em, _ := e.(map[string]any)
		enc, _ := em["enc"].(string)
		fp, _ := em["fp"].(string)
		fingerprints = append(fingerprints, fp)
		if enc == "" || len(ring) == 0 {
			continue
		}
		block, err := armor.Decode(strings.NewReader(enc))
		if err != nil {
			continue
		}
		md, err := openpgp.ReadMessage(block.Body, ring, nil, nil)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(md.UnverifiedBody)
		if err != nil {
			return nil, nil, errors.New("reading the data key PGP decrypts: the message does not read to its end")
		}
		return b, fingerprints, nil
	}
	return nil, fingerprints, nil
}
