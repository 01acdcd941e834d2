package cli

import (
	"context"
	"time"

	"github.com/spf13/pflag"
	helmaction "helm.sh/helm/v3/pkg/action"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/live"
)

// kubeOptions choose the cluster, with Helm's flag names and environment fallbacks.
type kubeOptions struct {
	kubeconfig  string
	kubeContext string
	timeout     time.Duration
}

// BindFlags registers --kubeconfig, --kube-context and --request-timeout on fs.
func (o *kubeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "kube-context", envOr("HELM_KUBECONTEXT", ""), "the kubeconfig context to use")
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "the longest one request to the API server may take")
}

// connect returns a client of the chosen cluster, or an error saying why it is unreachable.
func (o *kubeOptions) connect(ctx context.Context) (*live.Client, error) {
	return live.New(ctx, live.Options{Kubeconfig: o.kubeconfig, Context: o.kubeContext, Timeout: o.timeout})
}

// options are the cluster choice for the action layer.
func (o *kubeOptions) options() action.KubeOptions {
	return action.KubeOptions{Kubeconfig: o.kubeconfig, Context: o.kubeContext, Timeout: o.timeout}
}

// newRESTGetter loads the kubeconfig once and gives the Helm SDK one rest.Config and one
// in-memory discovery cache for namespace; requests are counted in counts.
func (o *kubeOptions) newRESTGetter(namespace string, counts *live.Counts) (*action.RESTGetter, error) {
	cfg, err := action.NewConfiguration(o.options(), counts)
	if err != nil {
		return nil, err
	}
	return cfg.Getter(namespace), nil
}

// helmConfiguration returns the Helm SDK's action configuration for namespace ("" for all),
// over one getter (requests counted in counts), and that getter.
func (o *kubeOptions) helmConfiguration(namespace string, counts *live.Counts) (*helmaction.Configuration, *action.RESTGetter, error) {
	cfg, err := action.NewConfiguration(o.options(), counts)
	if err != nil {
		return nil, nil, err
	}
	h, err := cfg.Helm3(namespace)
	if err != nil {
		return nil, nil, err
	}
	return h, cfg.Getter(namespace), nil
}
