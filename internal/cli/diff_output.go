package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/output"
)

// outputDiff is -o diff: with HELM_DRIFT_EXTERNAL_DIFF set, the two sides are handed to that
// program instead.
const outputDiff = "diff"

// --color values.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// outputFlags are how every diff verb prints: the format, the line views' context and colour,
// and the ignore rules suggested after the report.
type outputFlags struct {
	// format is -o.
	format string
	// lines is -C: the unified diff's context lines (-1: the whole object).
	lines   int
	color   string
	noColor bool
	// suggest is --suggest-ignore's format ("" when not asked).
	suggest string
	// comments is --comments: how many comments -o github and gitlab may split into.
	comments int
	// problems and notes are said of the whole run (output.Options).
	problems, notes []string
}

// bind registers the output flags on fs; manifest says whether the verb offers -o manifest.
func (o *outputFlags) bind(fs *pflag.FlagSet, manifest bool) {
	formats := output.Usage()
	if manifest {
		formats += ", manifest (what would be installed, compared with nothing)"
	}
	fs.StringVarP(&o.format, "output", "o", "table", formats)
	fs.IntVarP(&o.lines, "context", "C", 3, "-o diff, github, gitlab: unchanged lines shown around each change; -1 shows the whole object")
	fs.IntVar(&o.comments, "comments", 1, "-o github, gitlab: split into at most this many comments (1-20), each within the platform's limit, separated by a marker line that helm drift comment posts one by one")
	fs.StringVar(&o.suggest, "suggest-ignore", "", "after the report, the ignore rules that stop drift correction fighting a controller over a field the chart states (who owns it: metadata.managedFields; an HPA's target's replicas, an injected caBundle, an aggregated ClusterRole's rules), never for a field the release or a person (kubectl) set: --suggest-ignore (Flux driftDetection.ignore) or --suggest-ignore=argocd (ignoreDifferences); in -o json/yaml as suggestedIgnore")
	fs.Lookup("suggest-ignore").NoOptDefVal = advise.Flux
	fs.StringVar(&o.color, "color", colorAuto, "colour in the table and -o diff: auto (on a terminal, unless NO_COLOR is set), always (even in a pipe or with NO_COLOR), never")
	fs.BoolVar(&o.noColor, "no-color", false, "the same as --color never")
}

// validate checks the output flags; one says whether the verb prints one release (-o manifest
// needs one).
func (o *outputFlags) validate(one bool) error {
	switch {
	case o.format == output.Manifest && !one:
		return fmt.Errorf("-o manifest goes with \"diff upgrade\" and \"diff helmrelease NAME\" (one release): it prints what would be installed")
	case o.format != output.Manifest && !slices.Contains(output.Names(), o.format):
		return fmt.Errorf("--output %q: want one of %s, or manifest", o.format, strings.Join(output.Names(), ", "))
	case o.color != colorAuto && o.color != colorAlways && o.color != colorNever:
		return fmt.Errorf("--color %q: want auto, always or never", o.color)
	case o.comments < 1 || o.comments > 20:
		return fmt.Errorf("--comments %d: want 1 to 20", o.comments)
	case o.lines < -1:
		return fmt.Errorf("--context %d: want 0 or more lines, or -1 for the whole object", o.lines)
	case o.suggest != "" && o.suggest != advise.Flux && o.suggest != advise.ArgoCD:
		return fmt.Errorf("--suggest-ignore %q: want flux or argocd", o.suggest)
	case o.suggest != "" && (o.format == "counts" || o.format == output.Manifest):
		return fmt.Errorf("--suggest-ignore prints fields and managers: it does not go with -o %s", o.format)
	}
	return nil
}

// lineView reports whether the output shows each object's two sides (-o diff, github,
// gitlab): the measurement must keep them.
func (o *outputFlags) lineView() bool {
	f, err := output.Lookup(o.format)
	return err == nil && f.Sides
}

// manifest reports whether -o manifest asks for the render itself, measured against nothing.
func (o *outputFlags) manifest() bool { return o.format == output.Manifest }

// externalDiff is the program HELM_DRIFT_EXTERNAL_DIFF names for -o diff ("" for none).
func (o *outputFlags) externalDiff() string {
	if o.format != outputDiff {
		return ""
	}
	return strings.TrimSpace(os.Getenv(output.ExternalDiffEnv))
}

// colour reports whether the table or the unified diff is coloured: --color always, or auto
// with out a terminal and NO_COLOR unset (no-color.org: an explicit request wins).
func (o *outputFlags) colour(out io.Writer) bool {
	switch {
	case o.format != "table" && o.format != outputDiff:
		return false
	case o.noColor || o.color == colorNever:
		return false
	case o.color == colorAlways:
		return true
	case os.Getenv("NO_COLOR") != "":
		return false
	}
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// streams reports whether a run over many releases prints each release's diff as soon as it
// is measured: -o diff, with no external program (it diffs two whole trees) and no suggested
// rules (they follow every report).
func (o *outputFlags) streams() bool {
	return o.format == outputDiff && o.externalDiff() == "" && o.suggest == ""
}

// options are the formats' options for out.
func (o *outputFlags) options(out io.Writer) output.Options {
	return output.Options{Context: o.lines, Colour: o.colour(out), Comments: o.comments, Problems: o.problems, Notes: o.notes}
}

// writeReport prints one report (its Stamp set) in the asked format; with
// HELM_DRIFT_EXTERNAL_DIFF it returns the program's exit code.
func (o *outputFlags) writeReport(out, errOut io.Writer, rep *diff.Report) (int, error) {
	if prog := o.externalDiff(); prog != "" {
		row := diff.Summarise(rep)
		row.Report = rep
		return output.RunExternal(context.Background(), prog, []diff.SummaryRow{row}, out, errOut)
	}
	return ExitOK, output.WriteReport(out, rep, o.format, o.options(out))
}

// writeSummary prints the rows of a run over many releases in the asked format; with
// HELM_DRIFT_EXTERNAL_DIFF it returns the program's exit code (else -1).
func (o *outputFlags) writeSummary(out, errOut io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun) (int, error) {
	if prog := o.externalDiff(); prog != "" {
		return output.RunExternal(context.Background(), prog, rows, out, errOut)
	}
	return -1, output.WriteSummary(out, rows, clusters, o.format, o.options(out))
}

// writeSuggested prints, after the reports, the ignore rules --suggest-ignore asked for, one
// block per report (in -o json and yaml they are in the report, or in the summary's rows, as
// suggestedIgnore).
func (o *outputFlags) writeSuggested(out io.Writer, reps []*diff.Report) error {
	if o.suggest == "" || o.format == "json" || o.format == "yaml" {
		return nil
	}
	fence := o.format == "markdown" || o.format == output.GitHub.Name || o.format == output.GitLab.Name
	for _, r := range reps {
		if a := r.Suggested; a == nil || len(reps) > 1 && len(a.Rules) == 0 && len(a.Skipped) == 0 && len(a.Notes) == 0 {
			continue // over many releases, only those with something to say
		}
		what := "release " + r.Namespace + "/" + r.Release
		if r.Next != nil {
			what = "HelmRelease " + r.HelmRelease
		}
		fmt.Fprintln(out)
		if fence {
			fmt.Fprintln(out, "```yaml")
		} else if len(reps) > 1 || o.format != "table" {
			fmt.Fprintln(out, "---")
		}
		if err := advise.Write(out, r.Suggested, what, o.suggest); err != nil {
			return err
		}
		if fence {
			fmt.Fprintln(out, "```")
		}
	}
	return nil
}
