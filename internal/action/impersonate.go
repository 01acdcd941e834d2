package action

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// As is the configuration acting as user (Kubernetes impersonation, as helm-controller's
// kube.WithImpersonate): the same kubeconfig, discovery cache and request counts, a client
// of its own.
func (c *Configuration) As(user string) *Configuration {
	cfg := rest.CopyConfig(c.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return &Configuration{Counts: c.Counts, loader: c.loader, config: cfg, disc: c.disc, mapper: c.mapper}
}

// serviceAccountUser is the user name of a service account, as the API server and
// helm-controller's SetImpersonationConfig spell it.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// impersonation decides, once per service account and run, whether the renders may act as it.
type impersonation struct {
	mu   sync.Mutex
	seen map[string]*diff.Lookup
}

// lookup is how the chart's lookup calls of a HelmRelease in namespace with account are
// answered: as the account (helm-controller impersonates it for the whole Helm
// configuration) when the user may impersonate it (a SelfSubjectAccessReview of impersonate
// on serviceaccounts, as the API server's impersonation filter checks), else as the user,
// said in Reason. account "": nil, helm-controller answers as itself.
func (im *impersonation) lookup(ctx context.Context, c *Configuration, namespace, account string) (*diff.Lookup, error) {
	if account == "" || namespace == "" {
		return nil, nil
	}
	user := serviceAccountUser(namespace, account)
	im.mu.Lock()
	defer im.mu.Unlock()
	if l, ok := im.seen[user]; ok {
		return l, nil
	}
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: namespace, Name: account},
	}}
	l := &diff.Lookup{Account: user}
	switch got, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{}); {
	case err != nil:
		l.Reason = fmt.Sprintf("could not ask whether you may impersonate serviceaccount %s/%s (%v)", namespace, account, err)
	case !got.Status.Allowed:
		l.Reason = fmt.Sprintf("you may not impersonate serviceaccount %s/%s (grant the verb impersonate on it to render as helm-controller does)", namespace, account)
	default:
		l.Impersonated = true
	}
	if im.seen == nil {
		im.seen = map[string]*diff.Lookup{}
	}
	im.seen[user] = l
	return l, nil
}
