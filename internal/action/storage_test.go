package action

import (
	"context"
	"testing"

	"helm.sh/helm/v4/pkg/release/common"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/helm-drift/helm-drift/internal/memo"
)

// TestListedSecrets: the Helm 4 storage reads of several releases in one namespace (history,
// last and deployed revision, one revision) are answered by one LIST, with what the cluster's
// own reads give; a selection the list cannot answer, and a Secret outside it, go to the
// cluster.
func TestListedSecrets(t *testing.T) {
	cs := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "apps", Labels: map[string]string{"app": "x"}}})
	direct := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets("apps")))
	for _, r := range []*release4.Release{
		{Name: "web", Version: 1, Namespace: "apps", Manifest: "a: 1\n", Info: &release4.Info{Status: common.StatusSuperseded}},
		{Name: "web", Version: 2, Namespace: "apps", Manifest: "a: 2\n", Info: &release4.Info{Status: common.StatusDeployed}},
		{Name: "db", Version: 1, Namespace: "apps", Manifest: "b: 1\n", Info: &release4.Info{Status: common.StatusFailed}},
	} {
		if err := direct.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	cs.ClearActions()
	lists, key := &memo.Map[storageKey, []corev1.Secret]{}, storageKey{namespace: "apps"}
	listed := storage.Init(driver.NewSecrets(&listedSecrets{SecretInterface: cs.CoreV1().Secrets("apps"), lists: lists, key: key}))
	again := storage.Init(driver.NewSecrets(&listedSecrets{SecretInterface: cs.CoreV1().Secrets("apps"), lists: lists, key: key}))

	manifest := func(r any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r.(*release4.Release).Manifest
	}
	for _, name := range []string{"web", "db"} {
		for _, s := range []*storage.Storage{listed, again} {
			if got, want := manifest(s.Last(name)), manifest(direct.Last(name)); got != want {
				t.Errorf("Last(%s) = %q, want %q", name, got, want)
			}
			h, err := s.History(name)
			hd, _ := direct.History(name)
			if err != nil || len(h) != len(hd) {
				t.Errorf("History(%s): %d revisions (%v), want %d", name, len(h), err, len(hd))
			}
		}
	}
	if got := manifest(listed.Deployed("web")); got != "a: 2\n" {
		t.Errorf("Deployed(web) = %q", got)
	}
	if _, err := listed.Deployed("db"); err == nil {
		t.Error("Deployed(db): a failed release has no deployed revision")
	}
	if got := manifest(listed.Get("web", 1)); got != "a: 1\n" {
		t.Errorf("Get(web, 1) = %q", got)
	}
	if _, err := listed.Last("gone"); err == nil {
		t.Error("Last(gone): want not found")
	}
	listCalls := func() (n int) {
		for _, a := range cs.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	// direct's own reads above: a Last and a History for each name and each of the two
	// others, 8; listed and again, sharing the list: one LIST between them.
	if got := listCalls(); got != 9 {
		t.Errorf("%d LISTs, want 9: 8 of the direct storage, 1 for both listed ones", got)
	}

	// What the list cannot answer is the cluster's.
	sec := &listedSecrets{SecretInterface: cs.CoreV1().Secrets("apps"), lists: lists, key: key}
	cs.ClearActions()
	if got, err := sec.List(context.Background(), metav1.ListOptions{LabelSelector: "app=x"}); err != nil || len(got.Items) != 1 {
		t.Errorf("List(app=x): %v, %v; want the one Secret, from the cluster", got, err)
	}
	if got, err := sec.Get(context.Background(), "other", metav1.GetOptions{}); err != nil || got.Name != "other" {
		t.Errorf("Get(other): %v, %v", got, err)
	}
	if n := len(cs.Actions()); n != 2 {
		t.Errorf("%d requests, want 2 (the LIST app=x and the GET of other)", n)
	}
	// The copies handed out are the caller's to change.
	got, _ := sec.List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	got.Items[0].Labels["status"] = "changed"
	if again, _ := sec.List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"}); again.Items[0].Labels["status"] == "changed" {
		t.Error("List hands out the list's own items")
	}
}
