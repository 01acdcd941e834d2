package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/action"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/output"
)

// Exit codes of diff.
const (
	// ExitDrift: diff found divergences.
	ExitDrift = 2
	// ExitUnmeasured: diff could not measure (an object or kind unreadable, the API unreachable).
	ExitUnmeasured = 3
)

// exitCode is the one exit-code policy of every diff, of one release or of many: the worst
// verdict of the tallies (3 if anything could not be measured, else 2 if anything diverges by
// on, else 0).
func exitCode(on diff.ExitOn, tallies ...diff.Tally) int {
	worst := diff.Clean
	for _, t := range tallies {
		worst = max(worst, t.Verdict(on))
	}
	switch worst {
	case diff.Unmeasured:
		return ExitUnmeasured
	case diff.Diverging:
		return ExitDrift
	}
	return ExitOK
}

// diffVerb is one of diff's verbs: its flags bound to its own options, and its run.
type diffVerb interface {
	// common is what every verb shares.
	common() *diffCommon
	// usage is the verb's --help text before its flags.
	usage() string
	// bind registers the verb's flags, shared ones included, on fs.
	bind(fs *pflag.FlagSet)
	// validate checks the flags and positional arguments (fs.Args() without the verb).
	validate(fs *pflag.FlagSet) error
	// run measures and prints, and returns the exit code.
	run(ctx context.Context, fs *pflag.FlagSet, in io.Reader, out, errOut io.Writer) int
}

// diffCommon are the flags every diff verb has: what is compared and how, how it is printed,
// what exits 2, and the cluster.
type diffCommon struct {
	namespace  string
	measure    action.Measure
	ignore     []string
	ignoreFile string
	stats      bool
	exitOn     diff.ExitOn
	out        outputFlags
	kube       kubeOptions
	// stamp is when and against what the run measures (one cluster).
	stamp diff.Stamp
	// streamed: the run over many releases printed each release's diff as it was measured
	// (stream); streamErr is the first error that printing met.
	streamed  bool
	streamErr error
}

// stream makes a run over many releases on one cluster print each release's -o diff as soon
// as it and those before it are measured, rather than hold every report to the end.
func (c *diffCommon) stream(out io.Writer) {
	if !c.out.streams() {
		return
	}
	c.streamed = true
	first := true
	c.measure.Each = func(row diff.SummaryRow) {
		if c.streamErr == nil {
			c.streamErr = output.WriteDiffBlock(out, row, first, false, c.out.options(out))
		}
		first = false
	}
}

func (c *diffCommon) common() *diffCommon { return c }

// bind registers the shared flags on fs; manifest says whether the verb offers -o manifest.
func (c *diffCommon) bind(fs *pflag.FlagSet, manifest bool) {
	fs.StringVarP(&c.namespace, "namespace", "n", envOr("HELM_NAMESPACE", "default"), "the release namespace")
	c.out.bind(fs, manifest)
	fs.StringArrayVar(&c.ignore, "ignore", nil, "an RFC 6901 JSON pointer to leave out of the comparison in every object, e.g. /spec/replicas; repeatable")
	fs.StringVar(&c.ignoreFile, "ignore-file", "", "a YAML list of ignore rules in Flux's syntax (paths, optional target), as in spec.driftDetection.ignore")
	fs.StringVar((*string)(&c.measure.Normalize), "normalize", string(diff.Auto), "how API-server defaults are told from drift: server (a dry-run create per object), offline (the API server's defaulting, run in this process; get/list RBAC only) or auto (server where permitted)")
	fs.IntVar(&c.measure.Workers, "concurrency", 8, "requests in flight at most (1-64)")
	fs.BoolVar(&c.stats, "stats", false, "print the API requests made to stderr")
	fs.StringVar((*string)(&c.exitOn), "exit-code-on", string(diff.ExitOnChange), "what exits 2: change (any divergence, pending deletion, object to prune, object Helm or the API server would refuse: what the upgrade would change or fail on, as helm-diff's --detailed-exitcode) or drift (only fields the cluster moved away from what the stored release applied, and an upgrade that will fail: a sentinel that stays quiet on changes the chart alone brings); the same for one release and for --all")
}

// validate checks the shared flags; one says whether this run prints one release.
func (c *diffCommon) validate(one bool) error {
	if err := c.out.validate(one); err != nil {
		return err
	}
	switch n := c.measure.Normalize; {
	case n != diff.Server && n != diff.Offline && n != diff.Auto:
		return fmt.Errorf("--normalize %q: want server, offline or auto", n)
	case c.exitOn != diff.ExitOnChange && c.exitOn != diff.ExitOnDrift:
		return fmt.Errorf("--exit-code-on %q: want change or drift", c.exitOn)
	case c.measure.Workers < 1 || c.measure.Workers > 64:
		return fmt.Errorf("--concurrency %d: want 1 to 64", c.measure.Workers)
	}
	return nil
}

func runDiff(args []string, in io.Reader, out, errOut io.Writer) int {
	verb, v, fs, code, done := parseDiff(args, out, errOut)
	if done {
		return code
	}
	if err := v.validate(fs); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\nRun \"helm drift diff %s --help\" for the usage.\n", err, verb)
		return ExitError
	}
	c := v.common()
	rules, err := c.ignoreRules()
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	c.measure.Rules = rules
	c.measure.Views = c.out.lineView()
	c.measure.Suggest = c.out.suggest != ""
	return v.run(context.Background(), fs, in, out, errOut)
}

// connect opens the run's configuration on the one cluster asked for and stamps the run; on
// failure it prints why and returns the exit code.
func (c *diffCommon) connect(ctx context.Context, errOut io.Writer) (*action.Configuration, int, bool) {
	start := now()
	cfg, err := action.NewConfiguration(c.kube.options(), nil)
	if err == nil {
		err = cfg.Connect(ctx)
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return nil, ExitUnmeasured, false
	}
	c.stamp = diff.NewStamp(start, cfg.Context(), cfg.Server())
	return cfg, ExitOK, true
}

// printStats prints cfg's request counts when --stats asks for them.
func (c *diffCommon) printStats(cfg *action.Configuration, errOut io.Writer) {
	if c.stats {
		fmt.Fprintf(errOut, "helm-drift diff: %s\n", cfg.Counts)
	}
}

// parseDiff finds the verb (the first positional argument, wherever the flags stand) and
// parses the arguments with that verb's flags; a flag of another verb is refused with a line
// saying where it belongs. After "--", a deploy's helm upgrade argument list (diff upgrade).
// done is set when the run ends here, with code.
func parseDiff(args []string, out, errOut io.Writer) (verb string, v diffVerb, fs *pflag.FlagSet, code int, done bool) {
	before := args
	if deploy, ok := deployArgs(args); ok {
		before = args[:len(args)-len(deploy)-1]
	}
	verb, misplaced := scanDiffArgs(before)
	v, ok := diffVerbs()[verb]
	switch {
	case verb == "" && wantsHelp(before):
		fmt.Fprint(out, diffUsage())
		return verb, nil, nil, ExitOK, true
	case verb == "":
		fmt.Fprintf(errOut, "helm-drift diff: want %s\n\n%s", quotedVerbs(true), diffUsage())
		return verb, nil, nil, ExitError, true
	case !ok:
		fmt.Fprintf(errOut, "helm-drift diff: unknown \"diff %s\": want %s\n", verb, quotedVerbs(false))
		return verb, nil, nil, ExitError, true
	}
	fs = pflag.NewFlagSet("diff "+verb, pflag.ContinueOnError)
	v.bind(fs)
	if !wantsHelp(before) {
		for _, name := range misplaced {
			if fs.Lookup(name) == nil {
				fmt.Fprintf(errOut, "helm-drift diff: %s\nRun \"helm drift diff %s --help\" for the usage.\n", misplacedFlag(verb, name), verb)
				return verb, v, fs, ExitError, true
			}
		}
	}
	if u, ok := v.(*diffUpgradeCmd); ok {
		code, done = u.parse(fs, args, out, errOut)
		return verb, v, fs, code, done
	}
	if _, ok := deployArgs(args); ok {
		fmt.Fprintf(errOut, "helm-drift diff: \"--\" goes after \"diff upgrade\" and its diff flags: helm drift diff upgrade [flags] -- RELEASE CHART [helm upgrade flags]\n")
		return verb, v, fs, ExitError, true
	}
	code, done = parseFlags(fs, v.usage(), args, out, errOut)
	return verb, v, fs, code, done
}

// wantsHelp reports whether args ask for --help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}

// scanDiffArgs returns the first positional argument of args (the verb) and the names of the
// flags given, read with every verb's flags (so that a flag's value is not taken for the
// verb, and a flag of another verb is known as one).
func scanDiffArgs(args []string) (verb string, flags []string) {
	all := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	for _, v := range diffVerbs() {
		fs := pflag.NewFlagSet("", pflag.ContinueOnError)
		v.bind(fs)
		all.AddFlagSet(fs)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if verb == "" {
				verb = a
			}
			continue
		}
		var f *pflag.Flag
		inline := strings.Contains(a, "=")
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			f = all.Lookup(name)
		} else if len(a) >= 2 {
			f = all.ShorthandLookup(a[1:2])
			inline = inline || len(a) > 2
		}
		if f == nil {
			continue // unknown to every verb: the verb's own parse says so
		}
		flags = append(flags, f.Name)
		if !inline && f.NoOptDefVal == "" && f.Value.Type() != "bool" {
			i++ // its value
		}
	}
	return verb, flags
}

// ignoreRules reads --ignore and --ignore-file.
func (c *diffCommon) ignoreRules() ([]flux.IgnoreRule, error) {
	var rules []flux.IgnoreRule
	if len(c.ignore) > 0 {
		rules = append(rules, flux.IgnoreRule{Paths: c.ignore})
	}
	if c.ignoreFile != "" {
		data, err := os.ReadFile(c.ignoreFile)
		if err != nil {
			return nil, fmt.Errorf("--ignore-file: %w", err)
		}
		var fromFile []flux.IgnoreRule
		if err := sigsyaml.UnmarshalStrict(data, &fromFile); err != nil {
			return nil, fmt.Errorf("--ignore-file %s: want a YAML list of {paths, target} rules: %v", c.ignoreFile, err)
		}
		rules = append(rules, fromFile...)
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("ignore rule %d: %w", i+1, err)
		}
	}
	return rules, nil
}

// isInputError reports a mistake in what was asked (no such release, chart or values file):
// exit 1, not "could not measure".
func isInputError(err error) bool {
	var in *action.InputError
	return errors.As(err, &in)
}

// printManifest turns a run into report's measure: with -o manifest it prints the run's
// manifest (redacted) and reports nothing.
func (c *diffCommon) printManifest(run func() (*action.Result, error), out io.Writer) func() (*diff.Report, error) {
	return func() (*diff.Report, error) {
		res, err := run()
		switch {
		case err != nil:
			return nil, err
		case c.out.manifest():
			return nil, output.WriteManifest(out, res.Manifest)
		}
		return res.Report, nil
	}
}

// report measures one report, writes it and returns the exit code.
func (c *diffCommon) report(measure func() (*diff.Report, error), out, errOut io.Writer) int {
	rep, err := measure()
	if rep == nil && err == nil {
		return ExitOK // -o manifest: printed, nothing measured
	}
	if isInputError(err) {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	rep.Stamp = c.stamp
	external, err := c.out.writeReport(out, errOut, rep)
	if err == nil {
		err = c.out.writeSuggested(out, []*diff.Report{rep})
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	for _, obj := range rep.Objects {
		if obj.Error != "" {
			fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", obj.Object, obj.Error)
		}
	}
	code := exitCode(c.exitOn, rep.Tally())
	if c.out.externalDiff() != "" && code != ExitUnmeasured {
		return external // the program's, as kubectl diff passes it through
	}
	return code
}

// writeSummary prints the summary rows of a --all run, then on stderr what could not be
// measured (name says which release or HelmRelease a row is), and returns the exit code: 3 if
// anything could not be measured (err: the run itself), else 2 if any row shows drift, else 0.
func (c *diffCommon) writeSummary(s *action.Summary, err error, name func(diff.SummaryRow) string, out, errOut io.Writer) int {
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure: %v\n", err)
		return ExitUnmeasured
	}
	if s.Clusters == nil {
		s.Clusters = []diff.ClusterRun{{Stamp: c.stamp}}
	}
	external, err := -1, c.streamErr
	if c.streamed {
		output.WriteDiffEnd(out, s.Clusters, c.out.options(out))
	} else {
		external, err = c.out.writeSummary(out, errOut, s.Rows, s.Clusters)
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	var reps []*diff.Report
	for _, r := range s.Rows {
		if r.Report != nil {
			reps = append(reps, r.Report)
		}
	}
	if err := c.out.writeSuggested(out, reps); err != nil {
		fmt.Fprintf(errOut, "helm-drift diff: %v\n", err)
		return ExitError
	}
	tallies := make([]diff.Tally, 0, len(s.Rows)+1)
	for _, cl := range s.Clusters {
		if cl.Error != "" {
			fmt.Fprintf(errOut, "helm-drift diff: could not measure context %s: %s\n", cl.Context, cl.Error)
			tallies = append(tallies, diff.Tally{Failed: true})
		}
	}
	for _, u := range s.Unmeasured {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s\n", u)
		tallies = append(tallies, diff.Tally{Failed: true})
	}
	for _, g := range sameErrors(s.Rows, name) {
		fmt.Fprintf(errOut, "helm-drift diff: could not measure %s: %s\n", g.who, g.err)
	}
	for _, r := range s.Rows {
		tallies = append(tallies, r.Tally())
	}
	code := exitCode(c.exitOn, tallies...)
	if external >= 0 && code != ExitUnmeasured {
		return external // the program's, as kubectl diff passes it through
	}
	return code
}

// errorGroup is the rows that failed with one error: who names them.
type errorGroup struct{ who, err string }

// sameErrors groups the rows that could not be measured by their error, in the order the
// first of each comes: a chart repository out of reach fails every HelmRelease of its charts
// alike, and is said once per error, naming the first five rows and counting the others (the
// output names each row's own).
func sameErrors(rows []diff.SummaryRow, name func(diff.SummaryRow) string) []errorGroup {
	var order []string
	by := map[string][]string{}
	for _, r := range rows {
		if r.Error == "" {
			continue
		}
		if _, ok := by[r.Error]; !ok {
			order = append(order, r.Error)
		}
		by[r.Error] = append(by[r.Error], name(r))
	}
	out := make([]errorGroup, 0, len(order))
	for _, e := range order {
		names := by[e]
		who := names[0]
		if len(names) > 1 {
			shown := names[:min(len(names), 5)]
			list := strings.Join(shown, "; ")
			if len(names) > len(shown) {
				list += fmt.Sprintf("; and %d more", len(names)-len(shown))
			}
			who = fmt.Sprintf("%d alike (%s)", len(names), list)
		}
		out = append(out, errorGroup{who, e})
	}
	return out
}
