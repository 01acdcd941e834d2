package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestDiffTreeSealedSubstitution: a repository laid out for the Flux Operator (no bootstrap
// Kustomization) whose cluster Kustomization substitutes from a SOPS-encrypted Secret it applies
// itself. Without the key, its variables are substituted as written and named in a note: a
// change elsewhere is still shown (exit 2); a change of the Secret's ciphertext alone is not
// counted unchanged but named as what could not be measured (exit 3). With the key, the value
// is substituted and never printed.
func TestDiffTreeSealedSubstitution(t *testing.T) {
	root := golden.RepoRoot()
	secret, err := os.ReadFile(filepath.Join(root, "testdata/sops/age.yaml")) // stringData.key decrypts to "value"
	if err != nil {
		t.Fatal(err)
	}
	encrypted := strings.Replace(string(secret), "  name: age\n", "  name: age\n  namespace: flux-system\n", 1)
	web := func(replicas, greeting string) string {
		return sopsWeb("{replicas: " + replicas + ", image: nginx:1.27, greeting: \"" + greeting + "\"}")
	}
	dir := gitTree(t, map[string]string{
		"flux/cluster/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: cluster-apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  decryption: {provider: sops, secretRef: {name: sops-age}}
  postBuild:
    substituteFrom: [{kind: Secret, name: age}]
`,
		"apps/kustomization.yaml":       "resources: [secret.yaml, web.yaml]\n",
		"apps/secret.yaml":              encrypted,
		"apps/web.yaml":                 web("1", "hi"),
		"charts/web/Chart.yaml":         treeBase["charts/web/Chart.yaml"],
		"charts/web/templates/web.yaml": treeBase["charts/web/templates/web.yaml"],
	})
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", "")
	const note = "Secret flux-system/age (postBuild.substituteFrom of Kustomization flux-system/cluster-apps): SOPS-encrypted, not decrypted; its variables (key) are left as written"

	// The head greets with the Secret's value.
	writeTree(t, dir, map[string]string{"apps/web.yaml": web("2", "hi from ${key}")})
	code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", "json")
	doc := oneReport(t, out)
	if code != ExitDrift || !strings.Contains(strings.Join(doc.Notes, "\n"), note) || doc.HelmReleases[0].Report.Divergences != 2 {
		t.Errorf("replicas and greeting moved, the Secret not decrypted: exit %d, want 2, their two rows and the note %q\n%s%s", code, note, out, errOut)
	}
	key := filepath.Join(root, "testdata/sops/age.agekey")
	for _, format := range []string{"json", "table", "markdown", "diff"} {
		code, out, errOut := runTree(t, dir, "--base", "HEAD", "-o", format, "--sops-age-key-file", key)
		if code != ExitDrift || strings.Contains(out+errOut, "left as written") || !strings.Contains(out, "redacted") {
			t.Errorf("-o %s with the key: exit %d, want 2, the greeting redacted, no note of variables left as written\n%s%s", format, code, out, errOut)
		}
		if strings.Contains(out+errOut, "hi from value") || strings.Contains(out+errOut, "hi from ${key}") {
			t.Errorf("-o %s with the key prints the greeting, which holds the Secret's value:\n%s%s", format, out, errOut)
		}
	}

	// Only the ciphertext moves (another value, which this run cannot read).
	commitTree(t, dir, "two replicas")
	writeTree(t, dir, map[string]string{"apps/secret.yaml": strings.Replace(encrypted, "data:mHeXsmQ=", "data:mHeXsmR=", 1)})
	code, out, errOut = runTree(t, dir, "--base", "HEAD")
	want := "could not measure HelmRelease default/web: ${key} (SOPS-encrypted Secret flux-system/age, not decrypted) changed"
	if code != ExitUnmeasured || !strings.Contains(errOut, want) || strings.Contains(errOut, "0 HelmReleases compared") {
		t.Errorf("the ciphertext moved: exit %d, want 3 and %q\n%s%s", code, want, out, errOut)
	}
}
