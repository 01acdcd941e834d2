package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
)

// kubeOptions choose the cluster, with Helm's flag names and environment fallbacks.
type kubeOptions struct {
	kubeconfig  string
	kubeContext string
	timeout     time.Duration
	conn        *action.Connection
}

// BindFlags registers --kubeconfig, --kube-context and --request-timeout on fs.
func (o *kubeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "kube-context", envOr("HELM_KUBECONTEXT", ""), "the kubeconfig context to use")
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "the longest one request to the API server may take")
}

// options are the cluster choice for the action layer.
func (o *kubeOptions) options() action.KubeOptions {
	return action.KubeOptions{Kubeconfig: o.kubeconfig, Context: o.kubeContext, Timeout: o.timeout}
}

// connection is the run's one connection to the cluster, made on first use.
func (o *kubeOptions) connection() *action.Connection {
	if o.conn == nil {
		o.conn = &action.Connection{Options: o.options()}
	}
	return o.conn
}
