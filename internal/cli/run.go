// Package cli is helm-drift's command line: one file per command, each with an options struct
// that binds its flags. It turns results into exit codes and text; the work itself is done by
// the packages it calls. In `render`, only YAML ever goes to stdout.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes shared by all commands.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: bad input, a bad flag, or a failure; the message on stderr says which.
	ExitError = 1
)

// docsURL is where the long explanations live that a command's --help only names.
const docsURL = "https://github.com/helm-drift/helm-drift/blob/main/docs/"

// command is one subcommand.
type command struct {
	name  string
	short string
	run   func(args []string, in io.Reader, out, errOut io.Writer) int
}

func commands() []command {
	return []command{
		{"render", "post-renderer: inject Flux drift detection into chosen HelmReleases", runRender},
		{"owners", "find objects with two owners in rendered manifests", runOwners},
		{"diff", "compare what an upgrade would install, or a release, with the live cluster, field by field", runDiff},
		{"self", "self-management lifecycle: resume (end the bracket), status, handback", runSelf},
		{"comment", "keep a diff's report as sticky pull-request comments (GitHub, GitLab)", runComment},
		{"serve", "measure every release and HelmRelease again and again, served as Prometheus metrics", runServe},
		{"version", "print version, commit, Go and Helm SDK versions", runVersion},
	}
}

const rootUsage = `helm-drift keeps Helm releases and the live cluster honest when Flux is in the picture.

Usage:
  helm drift <command> [flags]        (as a Helm plugin)
  helm-drift <command> [flags]        (the binary itself)

Commands:
%s
Run "helm drift <command> --help" for a command's flags and examples.
`

// Run runs helm-drift with args (without the program name) and returns the exit code.
func Run(args []string, in io.Reader, out, errOut io.Writer) int {
	if len(args) == 0 {
		printRootUsage(errOut)
		return ExitError
	}
	switch args[0] {
	case "-h", "--help", "help":
		printRootUsage(out)
		return ExitOK
	case "--version":
		return runVersion(nil, in, out, errOut)
	case "__complete-plugin": // plugin.complete (hidden)
		return runComplete(args[1:], in, out, errOut)
	case "__completion-yaml": // writes completion.yaml (hidden)
		return runCompletionYAML(args[1:], in, out, errOut)
	case "__flags-md": // writes docs/flags.md (hidden)
		return runFlagsMD(args[1:], in, out, errOut)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], in, out, errOut)
		}
	}
	fmt.Fprintf(errOut, "helm-drift: unknown command %q\n\n", args[0])
	printRootUsage(errOut)
	return ExitError
}

func printRootUsage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintf(w, rootUsage, b.String())
}

// parseFlags parses a command's flags. It returns done when the command should stop with code:
// after printing help (ExitOK) or a flag error (ExitError).
func parseFlags(fs *pflag.FlagSet, usage string, args []string, out, errOut io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(out, usage)
		fmt.Fprintf(out, "\nFlags:\n%s", fs.FlagUsages())
		return ExitOK, true
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift %s: %v\nRun \"helm drift %s --help\" for the flags.\n", fs.Name(), err, fs.Name())
		return ExitError, true
	}
	return ExitOK, false
}
