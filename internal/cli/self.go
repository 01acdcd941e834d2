package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/selfmanaged"
)

const selfUsage = `The self-management lifecycle of a release rendered with "render --self". Until the hand-over
the Helm CLI may still upgrade, roll back and uninstall the release; after it, only
helm-controller writes it.

Usage:
  helm drift self resume RELEASE [-n NAMESPACE] [--timeout 300s] [--force]
      the hand-over: waits until the release is deployed, writes its user-supplied values to
      the values Secret, arms the CLI guard and resumes the HelmRelease (a second run changes
      nothing)
  helm drift self status RELEASE [-n NAMESPACE]
      who writes the release now, the guard, the last reconcile, and a "stuck:" line with the
      command that resolves any state nobody leaves by themselves
  helm drift self handback RELEASE [-n NAMESPACE]
      lifts the guard and removes the pair and the values Secret: the CLI owns the release again
  helm drift self uninstall RELEASE [-n NAMESPACE] [--no-hooks]
      handback, then uninstalls the release (helm uninstall is refused once the guard is armed)

Exit codes: 0 done; 1 an error (the message says which, and what to run).
The pair, the bracket, the guard, every stuck state: ` + docsURL + `self.md
`

// selfOptions are the flags of `self`.
type selfOptions struct {
	namespace string
	timeout   time.Duration
	force     bool
	noHooks   bool
	kube      kubeOptions
}

// BindFlags registers the self flags on fs.
func (o *selfOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	fs.DurationVar(&o.timeout, "timeout", 300*time.Second, "resume: how long to wait for the release to be deployed; handback: for the pair to be gone and the CLI guard lifted")
	fs.BoolVar(&o.force, "force", false, "resume: resume even when the release failed")
	fs.BoolVar(&o.noHooks, "no-hooks", false, "uninstall: do not run the release's hooks, as helm uninstall --no-hooks")
	o.kube.BindFlags(fs)
}

func runSelf(args []string, in io.Reader, out, errOut io.Writer) int {
	var o selfOptions
	fs := pflag.NewFlagSet("self", pflag.ContinueOnError)
	o.BindFlags(fs)
	if code, done := parseFlags(fs, selfUsage, args, out, errOut); done {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(errOut, "helm-drift self: want a subcommand and a release: self resume|status|handback|uninstall RELEASE\n")
		return ExitError
	}
	sub, name := fs.Arg(0), fs.Arg(1)
	run := map[string]func(context.Context, *action.Self, string, io.Writer) error{
		"resume": printResume, "status": printSelfStatus, "handback": printHandback, "uninstall": printUninstall,
	}[sub]
	if run == nil {
		fmt.Fprintf(errOut, "helm-drift self: unknown subcommand %q: want resume, status, handback or uninstall\n", sub)
		return ExitError
	}
	cfg, err := action.NewConfiguration(o.kube.options(), nil)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift self %s: %v\n", sub, err)
		return ExitError
	}
	self := &action.Self{Config: cfg, Namespace: o.namespace, Timeout: o.timeout, Force: o.force, NoHooks: o.noHooks}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout+2*time.Minute)
	defer cancel()
	if err := run(ctx, self, name, out); err != nil {
		fmt.Fprintf(errOut, "helm-drift self %s: %v\n", sub, err)
		return ExitError
	}
	return ExitOK
}

func printResume(ctx context.Context, s *action.Self, name string, out io.Writer) error {
	r, err := s.Resume(ctx, name)
	if err != nil {
		return err
	}
	ns := s.Namespace
	if r.NothingToDo {
		fmt.Fprintf(out, "HelmRelease %s/%s already resumed and values Secret %s up to date (revision %d): nothing to do\n", ns, name, r.Secret, r.Revision)
		return nil
	}
	fmt.Fprintf(out, "release %s/%s revision %d is %s; its user-supplied values (%s) written to Secret %s\n", ns, name, r.Revision, r.Status, plural(r.Values, "top-level key"), r.Secret)
	if r.Armed {
		fmt.Fprintf(out, "CLI guard armed (ValidatingAdmissionPolicy %s): from now on the Helm CLI may not upgrade, roll back or uninstall the release\n", selfmanaged.GuardName(ns, name))
	}
	switch {
	case r.Resumed:
		fmt.Fprintf(out, "HelmRelease %s/%s resumed and reconcile requested: helm-controller writes the release from now on\n", ns, name)
	case r.ValuesChanged:
		fmt.Fprintf(out, "HelmRelease %s/%s was active; reconcile requested for the new values\n", ns, name)
	default:
		fmt.Fprintf(out, "HelmRelease %s/%s was active and marked helm.sh/resource-policy: keep\n", ns, name)
	}
	return nil
}

func printSelfStatus(ctx context.Context, s *action.Self, name string, out io.Writer) error {
	st, err := s.Status(ctx, name)
	if err != nil {
		return err
	}
	ns := s.Namespace
	switch {
	case st.Release != nil:
		fmt.Fprintf(out, "release:   %s/%s revision %d, %s, chart %s-%s\n", ns, name, st.Release.Revision, st.Release.Status, st.Release.Chart, st.Release.ChartVersion)
	case st.Gone:
		fmt.Fprintf(out, "release:   %s/%s: not installed\n", ns, name)
	default:
		fmt.Fprintf(out, "release:   %s/%s: %v\n", ns, name, st.ReleaseErr)
	}
	if st.SourceURL != "" {
		fmt.Fprintf(out, "source:    %s, range %s\n", st.SourceURL, st.SourceRange)
	}
	switch {
	case st.GuardErr != nil:
		fmt.Fprintf(out, "guard:     unknown: %v\n", st.GuardErr)
	case st.Guard == action.GuardArmed:
		fmt.Fprintf(out, "guard:     armed (ValidatingAdmissionPolicy %s): the Helm CLI may not upgrade, roll back or uninstall the release\n", st.GuardName)
	case st.Guard == action.GuardDisarmed:
		fmt.Fprintf(out, "guard:     not armed yet (ValidatingAdmissionPolicy %s only audits until the hand-over): the Helm CLI may still upgrade, roll back and uninstall the release\n", st.GuardName)
	default:
		fmt.Fprintf(out, "guard:     off: nothing keeps the Helm CLI from writing or uninstalling the release\n")
	}
	if st.HelmRelease {
		fmt.Fprintf(out, "reconcile: last handled %s; Ready=%s\n", orNone(st.LastHandled), st.Ready)
	}
	fmt.Fprintf(out, "writer:    %s\n", st.Writer)
	if st.Stuck != "" {
		fmt.Fprintf(out, "stuck:     %s\n", st.Stuck)
	}
	return nil
}

func printHandback(ctx context.Context, s *action.Self, name string, out io.Writer) error {
	r, err := s.Handback(ctx, name)
	if err != nil {
		return err
	}
	if !r.Installed {
		fmt.Fprintf(out, "%s removed; release %s/%s is not installed, and nothing will install it again\n", r.Removed, s.Namespace, name)
		return nil
	}
	fmt.Fprintf(out, "%s removed; release %s/%s stays installed and the Helm CLI owns it again\n", r.Removed, s.Namespace, name)
	return nil
}

func printUninstall(ctx context.Context, s *action.Self, name string, out io.Writer) error {
	r, err := s.Uninstall(ctx, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s removed; release %s/%s uninstalled", r.Removed, s.Namespace, name)
	if r.Info != "" {
		fmt.Fprintf(out, " (%s)", r.Info)
	}
	fmt.Fprintln(out, ": nothing will install it again")
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orNone(s string) string {
	if s == "" {
		return "never"
	}
	return s
}
