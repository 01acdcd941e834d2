package action

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestBuildable: the check that stands for the SDK's build of an upgrade's objects refuses a
// manifest with a kind the cluster does not serve, naming the object and the manifest as Helm
// does, and passes one whose kinds are all served (hooks are not built).
func TestBuildable(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	c := &Configuration{mapper: m}
	served := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n" +
		"---\napiVersion: example.com/v1\nkind: Job\nmetadata:\n  name: h\n  annotations: {helm.sh/hook: pre-upgrade}\n"
	if err := c.buildable(served, "new"); err != nil {
		t.Errorf("served kinds: %v", err)
	}
	gone := served + "---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: apps}\n"
	err := c.buildable(gone, "current")
	want := `unable to build kubernetes objects from current release manifest: resource mapping not found for name: "g" namespace: "apps" from "": no matches for kind "Gadget" in version "example.com/v1"; ensure CRDs are installed first`
	if err == nil || err.Error() != want {
		t.Errorf("a kind not served: %v\nwant %s", err, want)
	}
	// The new manifest is reported as Helm's validation reports it: bare.
	if err := c.buildable(gone, "new"); err == nil || err.Error() != strings.TrimPrefix(want, "unable to build kubernetes objects from current release manifest: ") {
		t.Errorf("a kind not served in the new manifest: %v", err)
	}
	if err := c.buildable("---apiVersion: v1\n", "current"); err == nil || !strings.Contains(err.Error(), "current release manifest") {
		t.Errorf("a manifest that does not split: %v", err)
	}
}

// With no cluster, only an install renders (e2e TestRenderUpgradeWithoutCluster holds it to
// helm template); an upgrade, or lookup, needs the cluster and says so.
func TestRenderUpgradeWithoutClusterRefuses(t *testing.T) {
	var none *Configuration
	for _, c := range []struct {
		spec UpgradeSpec
		want string
	}{
		{UpgradeSpec{Release: "web", Namespace: "apps", Chart: "testdata/charts/webapp"}, "renders against the release the cluster stores"},
		{UpgradeSpec{Release: "web", Namespace: "apps", Chart: "testdata/charts/webapp", Install: true, Lookup: true}, "lookup reads the cluster"},
	} {
		_, err := none.RenderUpgrade(context.Background(), "helm4", c.spec)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an input error saying %q", c.spec, err, c.want)
		}
	}
}
