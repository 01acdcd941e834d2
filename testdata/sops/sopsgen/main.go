// sopsgen encrypts a plain file with the sops library (v3.13.2, as kustomize-controller v1.9.6
// builds it) for an age recipient, then decrypts it as kustomize-controller's decryptor does
// (SopsDecryptWithFormat: LoadEncryptedFile, the data key, Decrypt, EmitPlainFile).
//
//	sopsgen RECIPIENT IN ENCRYPTED DECRYPTED   (SOPS_AGE_KEY_FILE set for the decryption)
package main

import (
	"os"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/version"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	recipient, in, encPath, decPath := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	format := formats.FormatForPath(in)
	store := common.StoreForFormat(format, config.NewStoresConfig())
	data, err := os.ReadFile(in)
	must(err)
	branches, err := store.LoadPlainFile(data)
	must(err)
	ageKeys, err := age.MasterKeysFromRecipients(recipient)
	must(err)
	var group sops.KeyGroup
	for _, k := range ageKeys {
		group = append(group, keys.MasterKey(k))
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{KeyGroups: []sops.KeyGroup{group}, Version: version.Version}}
	dataKey, errs := tree.GenerateDataKey()
	if len(errs) > 0 {
		panic(errs)
	}
	must(common.EncryptTree(common.EncryptTreeOpts{DataKey: dataKey, Tree: &tree, Cipher: aes.NewCipher()}))
	enc, err := store.EmitEncryptedFile(tree)
	must(err)
	must(os.WriteFile(encPath, enc, 0o644))

	// As kustomize-controller decrypts it.
	tree2, err := store.LoadEncryptedFile(enc)
	must(err)
	key, err := tree2.Metadata.GetDataKey()
	must(err)
	_, err = tree2.Decrypt(key, aes.NewCipher())
	must(err)
	out, err := common.StoreForFormat(format, config.NewStoresConfig()).EmitPlainFile(tree2.Branches)
	must(err)
	must(os.WriteFile(decPath, out, 0o644))
}
