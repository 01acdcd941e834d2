package action

import (
	"context"
	"os"

	action4 "helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/helm-drift/helm-drift/internal/memo"
)

// releaseStorage answers the Helm 4 SDK's reads of release storage during one run: each
// namespace's release Secrets (label owner=helm) are LISTed once, as the user or account the
// run reads them as, and every later read of a release's history or revision in that
// namespace is answered from that list. Rendering one HelmRelease as helm-controller does
// reads its storage three times (whether to install or upgrade, and once in each of the two
// renders); over a fleet that was three LISTs per HelmRelease. Writes (none on a dry run) and
// reads the list cannot answer go to the cluster. The zero value is ready; a nil one reads
// the cluster each time.
type releaseStorage struct {
	lists   memo.Map[storageKey, []corev1.Secret]
	clients memo.Map[string, kubernetes.Interface]
}

// storageKey is one namespace's storage as one user reads it: an account that may not read
// the storage fails as helm-controller would, not from a list the user read.
type storageKey struct{ user, namespace string }

// helm4 is conf's Helm 4 SDK configuration with release storage in namespace, its reads
// answered by s.
func (s *releaseStorage) helm4(conf *Configuration, namespace string) (*action4.Configuration, error) {
	cfg, err := conf.Helm4(namespace)
	if err != nil || s == nil {
		return cfg, err
	}
	switch os.Getenv("HELM_DRIVER") {
	case "", "secret", "secrets":
	default:
		return cfg, nil // another driver reads no Secrets
	}
	user := conf.config.Impersonate.UserName
	cs, err := s.clients.Get(user, func() (kubernetes.Interface, error) {
		cs, err := kubernetes.NewForConfig(conf.RESTConfig())
		if err != nil {
			return nil, err
		}
		return cs, nil
	})
	if err != nil {
		return nil, err
	}
	d := driver.NewSecrets(&listedSecrets{SecretInterface: cs.CoreV1().Secrets(namespace), lists: &s.lists, key: storageKey{user, namespace}})
	d.SetLogger(cfg.Logger().Handler())
	cfg.Releases = storage.Init(d)
	return cfg, nil
}

// listedSecrets is the Secrets of one namespace, its release Secrets read once (see
// releaseStorage).
type listedSecrets struct {
	typedcorev1.SecretInterface
	lists *memo.Map[storageKey, []corev1.Secret]
	key   storageKey
}

// releases reads the namespace's release Secrets, once.
func (l *listedSecrets) releases(ctx context.Context) ([]corev1.Secret, error) {
	return l.lists.Get(l.key, func() ([]corev1.Secret, error) {
		got, err := l.SecretInterface.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
		if err != nil {
			return nil, err
		}
		return got.Items, nil
	})
}

// List answers a selection of release Secrets (a selector that requires owner=helm) from the
// list; any other selection asks the cluster. The items are copies: the driver hands their
// labels to the releases it decodes.
func (l *listedSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil || opts.FieldSelector != "" {
		return l.SecretInterface.List(ctx, opts)
	}
	if owner, ok := sel.RequiresExactMatch("owner"); !ok || owner != "helm" {
		return l.SecretInterface.List(ctx, opts)
	}
	items, err := l.releases(ctx)
	if err != nil {
		return nil, err
	}
	out := &corev1.SecretList{}
	for i := range items {
		if sel.Matches(labels.Set(items[i].Labels)) {
			out.Items = append(out.Items, *items[i].DeepCopy())
		}
	}
	return out, nil
}

// Get answers a release Secret from the list, anything else from the cluster.
func (l *listedSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	items, _ := l.releases(ctx) // a list it may not read: the cluster answers the GET
	for i := range items {
		if items[i].Name == name {
			return items[i].DeepCopy(), nil
		}
	}
	return l.SecretInterface.Get(ctx, name, opts)
}
