package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// ignoredUsage starts the help of the helm upgrade flags diff accepts and ignores: they change
// how or how long Helm applies, records or waits, not what it renders or what diff measures,
// so that a deploy's command line can be copied as it is.
const ignoredUsage = "accepted as helm upgrade takes it; changes nothing diff measures"

// ignoredFlags are the values of those flags (kept only so that they parse as Helm's do).
type ignoredFlags struct {
	description, wait, dryRun, helmOutput                        string
	waitForJobs, atomic, rollbackOnFailure, cleanupOnFail, debug bool
	createNamespace, noHooks, hideNotes, subNotes                bool
	disableOpenAPI                                               bool
	timeout                                                      time.Duration
	historyMax                                                   int
	labels                                                       map[string]string
}

// bind registers them, hidden from the flag list (the usage text names them).
func (g *ignoredFlags) bind(fs *pflag.FlagSet) {
	u := ignoredUsage
	fs.StringVar(&g.description, "description", "", u)
	// Helm 3's --wait is a bool, Helm 4's a strategy (watcher, hookOnly, legacy): both parse.
	fs.StringVar(&g.wait, "wait", "", u)
	fs.Lookup("wait").NoOptDefVal = "true"
	fs.StringVar(&g.dryRun, "dry-run", "", u+" (diff applies nothing anyway)")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&g.debug, "debug", false, u)
	fs.BoolVar(&g.waitForJobs, "wait-for-jobs", false, u)
	fs.BoolVar(&g.atomic, "atomic", false, u)
	fs.BoolVar(&g.rollbackOnFailure, "rollback-on-failure", false, u)
	fs.BoolVar(&g.cleanupOnFail, "cleanup-on-fail", false, u)
	fs.BoolVar(&g.createNamespace, "create-namespace", false, u)
	fs.BoolVar(&g.noHooks, "no-hooks", false, u+" (diff compares no hook)")
	fs.BoolVar(&g.hideNotes, "hide-notes", false, u)
	fs.BoolVar(&g.subNotes, "render-subchart-notes", false, u)
	fs.BoolVar(&g.disableOpenAPI, "disable-openapi-validation", false, u+" (diff never validates against the OpenAPI schema)")
	fs.DurationVar(&g.timeout, "timeout", 5*time.Minute, u)
	fs.IntVar(&g.historyMax, "history-max", 10, u)
	fs.StringToStringVar(&g.labels, "labels", nil, u+" (labels of the release record, not of its objects)")
	for _, n := range []string{"description", "wait", "dry-run", "debug", "wait-for-jobs", "atomic", "rollback-on-failure", "cleanup-on-fail", "create-namespace",
		"no-hooks", "hide-notes", "render-subchart-notes", "disable-openapi-validation", "timeout", "history-max", "labels"} {
		_ = fs.MarkHidden(n)
	}
}

// bindDeployOutput registers helm upgrade's -o/--output (how helm prints the release) for the
// deploy's argument list after "--", where it must not be taken for diff's own -o.
func (g *ignoredFlags) bindDeployOutput(fs *pflag.FlagSet) {
	fs.StringVarP(&g.helmOutput, "output", "o", "table", ignoredUsage+" (how helm prints the release; diff's -o goes before \"--\")")
}

// refusedFlags are helm's cluster-connection flags, which diff cannot honour: it reads the
// cluster through a kubeconfig only.
var refusedFlags = []string{"kube-apiserver", "kube-token", "kube-as-user", "kube-as-group", "kube-ca-file",
	"kube-insecure-skip-tls-verify", "kube-tls-server-name"}

// bindRefused registers them so that they fail with a message saying why, not as unknown.
func bindRefused(fs *pflag.FlagSet) {
	for _, n := range refusedFlags {
		fs.String(n, "", "refused: diff reaches the cluster through --kubeconfig and --kube-context only")
		_ = fs.MarkHidden(n)
	}
	fs.Lookup("kube-insecure-skip-tls-verify").NoOptDefVal = "true"
}

// refusedMessage says why a cluster-connection flag of helm's is refused.
func refusedMessage(name string) string {
	return fmt.Sprintf("--%s: diff cannot honour it: it reaches the cluster through a kubeconfig only; put the server and credentials in one and pass --kubeconfig (and --kube-context)", name)
}
