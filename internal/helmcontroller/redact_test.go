package helmcontroller

import (
	"errors"
	"strings"
	"testing"
	"text/template"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRedact: a template function's error is withheld (it may quote a value), except an API
// server's refusal, which names the object and the user only.
func TestRedact(t *testing.T) {
	const secret = "s3cr3t-value"
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "settings",
		errors.New(`User "system:serviceaccount:apps:deployer" cannot get resource "configmaps" in API group "" in the namespace "shared"`))
	for _, tc := range []struct {
		name      string
		err       error
		want, not string
	}{
		{"api refusal", forbidden, `error calling a template function: configmaps "settings" is forbidden: User "system:serviceaccount:apps:deployer" cannot get`, "withheld"},
		{"other error", errors.New("bad value " + secret), "error calling a template function (details withheld: they may quote values)", secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := template.Must(template.New("cm.yaml").Funcs(template.FuncMap{"lookup": func() (string, error) { return "", tc.err }}).Parse(`{{ lookup }}`))
			err := tpl.Execute(&strings.Builder{}, nil)
			got := redact(err).Error()
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) || !strings.HasPrefix(got, "template: cm.yaml:1:3") {
				t.Errorf("redact(%q) = %q; want it to keep the location and %q, and not %q", err, got, tc.want, tc.not)
			}
		})
	}
}
