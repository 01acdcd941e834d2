package diff_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/diff/difftest"
	"github.com/helm-drift/helm-drift/internal/output"
)

// TestNoFormatPrintsASecret: a Secret whose value differs between the chart and the cluster
// (and one whose kind may not be read) is measured and printed in every output format; no
// format prints either value, nor the live value's base64.
func TestNoFormatPrintsASecret(t *testing.T) {
	const chart = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
stringData:
  password: chart-password`
	const live = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
type: Opaque
data:
  password: bGl2ZS1wYXNzd29yZA==`
	for name, forbidden := range map[string]bool{"measured": false, "forbidden": true} {
		cl := &difftest.Cluster{Objects: difftest.Objects(t, live), Forbidden: map[string]bool{"Secret": forbidden}}
		rep, err := diff.Run(context.Background(), cl, diff.Input{Release: "web", Namespace: "apps", Revision: 1, Desired: chart, Previous: chart, Options: diff.Options{Normalize: diff.Offline, Workers: 2, Views: true}})
		if err != nil {
			t.Fatal(err)
		}
		if !forbidden && rep.Divergences != 1 {
			t.Fatalf("%s: %d divergences, want the password's", name, rep.Divergences)
		}
		for _, format := range output.Names() {
			var buf bytes.Buffer
			if err := output.WriteReport(&buf, rep, format, output.Options{Context: -1}); err != nil {
				t.Fatal(err)
			}
			for _, secretValue := range []string{"chart-password", "live-password", "bGl2ZS1wYXNzd29yZA=="} {
				if strings.Contains(buf.String(), secretValue) {
					t.Errorf("%s: -o %s prints a Secret's value %q", name, format, secretValue)
				}
			}
		}
	}
}
