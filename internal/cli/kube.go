package cli

import (
	"fmt"
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
	// contexts and allContexts: the clusters of a fleet run (BindFleetFlags), measured
	// concurrently into one summary.
	contexts    []string
	allContexts bool
}

// BindFlags registers --kubeconfig, --kube-context and --request-timeout on fs.
func (o *kubeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.kubeContext, "kube-context", envOr("HELM_KUBECONTEXT", ""), "the kubeconfig context to use")
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "the longest one request to the API server may take")
}

// BindFleetFlags registers --kubeconfig, --request-timeout, a repeatable --kube-context and
// --all-contexts on fs: the flags of a command that measures several clusters in one run.
func (o *kubeOptions) BindFleetFlags(fs *pflag.FlagSet) {
	o.bindContexts(fs, "the kubeconfig context to use; repeatable with --all/-A: each context's cluster is measured, concurrently, into one summary with a CONTEXT column")
	fs.BoolVar(&o.allContexts, "all-contexts", false, "with --all/-A: measure the cluster of every context of the kubeconfig, concurrently, into one summary with a CONTEXT column")
}

// BindOneClusterFlags registers --kubeconfig, --request-timeout and --kube-context on fs for a
// command that measures one cluster: --kube-context given twice is refused by oneCluster, not
// silently the last.
func (o *kubeOptions) BindOneClusterFlags(fs *pflag.FlagSet) {
	o.bindContexts(fs, "the kubeconfig context to use")
}

func (o *kubeOptions) bindContexts(fs *pflag.FlagSet, contextUsage string) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	var def []string
	if c := envOr("HELM_KUBECONTEXT", ""); c != "" {
		def = []string{c}
	}
	fs.StringArrayVar(&o.contexts, "kube-context", def, contextUsage)
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "the longest one request to the API server may take")
}

// oneCluster refuses several clusters where a command measures one.
func (o *kubeOptions) oneCluster() error {
	if o.fleet() {
		return fmt.Errorf("several clusters (--kube-context given %d times, or --all-contexts) go with --all or -A of \"diff release\" and \"diff helmrelease\": one summary row per release and cluster", len(o.contexts))
	}
	return nil
}

// fleet reports whether several clusters were asked for (--kube-context twice or more, or
// --all-contexts).
func (o *kubeOptions) fleet() bool { return o.allContexts || len(o.contexts) > 1 }

// fleetContexts returns the contexts of a fleet run, in the order asked (--all-contexts: the
// kubeconfig's, sorted), each once.
func (o *kubeOptions) fleetContexts() ([]string, error) {
	if o.allContexts {
		return action.Contexts(o.kubeconfig)
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range o.contexts {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// options are the cluster choice for the action layer.
func (o *kubeOptions) options() action.KubeOptions {
	return action.KubeOptions{Kubeconfig: o.kubeconfig, Context: o.context(), Timeout: o.timeout}
}

// context is the one kubeconfig context asked for: --kube-context (BindFlags), or the one
// --kube-context of BindFleetFlags ("" for the current context).
func (o *kubeOptions) context() string {
	if o.kubeContext == "" && len(o.contexts) == 1 {
		return o.contexts[0]
	}
	return o.kubeContext
}

// connection is the run's one connection to the cluster, made on first use.
func (o *kubeOptions) connection() *action.Connection {
	if o.conn == nil {
		o.conn = &action.Connection{Options: o.options()}
	}
	return o.conn
}
