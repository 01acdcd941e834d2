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
	"github.com/helm-drift/helm-drift/internal/view"
)

// The views that need each object's two sides.
const (
	outputDiff   = "diff"
	outputGitHub = "github"
	outputGitLab = "gitlab"
)

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
}

// bind registers the output flags on fs; manifest says whether the verb offers -o manifest.
func (o *outputFlags) bind(fs *pflag.FlagSet, manifest bool) {
	formats := "table, json, yaml, markdown, counts, diff (a unified diff per object; HELM_DRIFT_EXTERNAL_DIFF runs a program on two trees instead), github or gitlab (a pull-request comment)"
	if manifest {
		formats += ", manifest (what would be installed, compared with nothing)"
	}
	fs.StringVarP(&o.format, "output", "o", "table", formats)
	fs.IntVarP(&o.lines, "context", "C", 3, "-o diff, github, gitlab: unchanged lines shown around each change; -1 shows the whole object")
	fs.StringVar(&o.suggest, "suggest-ignore", "", "after the report, the ignore rules that stop drift correction fighting a controller over a field the chart states (who owns it: metadata.managedFields; an HPA's target's replicas, an injected caBundle, an aggregated ClusterRole's rules), never for a field the release or a person (kubectl) set: --suggest-ignore (Flux driftDetection.ignore) or --suggest-ignore=argocd (ignoreDifferences); in -o json/yaml as suggestedIgnore")
	fs.Lookup("suggest-ignore").NoOptDefVal = advise.Flux
	fs.StringVar(&o.color, "color", colorAuto, "colour in the table and -o diff: auto (on a terminal, unless NO_COLOR is set), always (even in a pipe or with NO_COLOR), never")
	fs.BoolVar(&o.noColor, "no-color", false, "the same as --color never")
}

// validate checks the output flags; one says whether the verb prints one release (-o manifest
// needs one).
func (o *outputFlags) validate(one bool) error {
	switch {
	case o.format == outputManifest && !one:
		return fmt.Errorf("-o manifest goes with \"diff upgrade\" and \"diff helmrelease NAME\" (one release): it prints what would be installed")
	case o.format != outputManifest && !o.lineView() && !slices.Contains(diff.Formats, o.format):
		return fmt.Errorf("--output %q: want one of %s, diff, github, gitlab, or manifest", o.format, strings.Join(diff.Formats, ", "))
	case o.color != colorAuto && o.color != colorAlways && o.color != colorNever:
		return fmt.Errorf("--color %q: want auto, always or never", o.color)
	case o.lines < -1:
		return fmt.Errorf("--context %d: want 0 or more lines, or -1 for the whole object", o.lines)
	case o.suggest != "" && o.suggest != advise.Flux && o.suggest != advise.ArgoCD:
		return fmt.Errorf("--suggest-ignore %q: want flux or argocd", o.suggest)
	case o.suggest != "" && (o.format == "counts" || o.format == outputManifest):
		return fmt.Errorf("--suggest-ignore prints fields and managers: it does not go with -o %s", o.format)
	}
	return nil
}

// lineView reports whether the output is a line view (-o diff, github, gitlab).
func (o *outputFlags) lineView() bool {
	return o.format == outputDiff || o.format == outputGitHub || o.format == outputGitLab
}

// manifest reports whether -o manifest asks for the render itself, measured against nothing.
func (o *outputFlags) manifest() bool { return o.format == outputManifest }

// externalDiff is the program HELM_DRIFT_EXTERNAL_DIFF names for -o diff ("" for none).
func (o *outputFlags) externalDiff() string {
	if o.format != outputDiff {
		return ""
	}
	return strings.TrimSpace(os.Getenv(view.ExternalDiffEnv))
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

// writeReport prints one report in the asked format; for HELM_DRIFT_EXTERNAL_DIFF it returns
// the program's exit code.
func (o *outputFlags) writeReport(out, errOut io.Writer, rep *diff.Report, stamp diff.Stamp) (int, error) {
	if o.lineView() {
		row := diff.Summarise(rep)
		row.Report = rep
		return o.writeView([]diff.SummaryRow{row}, []diff.ClusterRun{{Stamp: stamp}}, out, errOut)
	}
	return ExitOK, diff.Write(out, []*diff.Report{rep}, o.format, o.colour(out))
}

// writeSummary prints the rows of a run over many releases in the asked format; for
// HELM_DRIFT_EXTERNAL_DIFF it returns the program's exit code (else -1).
func (o *outputFlags) writeSummary(out, errOut io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun) (int, error) {
	if !o.lineView() {
		return -1, diff.WriteSummary(out, rows, clusters, o.format)
	}
	code, err := o.writeView(rows, clusters, out, errOut)
	if o.externalDiff() == "" {
		code = -1
	}
	return code, err
}

// writeView prints rows (each with its report) in a line view: the unified diff, the
// pull-request comment, or, with HELM_DRIFT_EXTERNAL_DIFF, the program's output on the two
// trees, whose exit code it returns.
func (o *outputFlags) writeView(rows []diff.SummaryRow, clusters []diff.ClusterRun, out, errOut io.Writer) (int, error) {
	switch o.format {
	case outputGitHub:
		return ExitOK, view.WriteComment(out, rows, clusters, view.GitHub, o.lines)
	case outputGitLab:
		return ExitOK, view.WriteComment(out, rows, clusters, view.GitLab, o.lines)
	}
	if prog := o.externalDiff(); prog != "" {
		return view.RunExternal(context.Background(), prog, rows, out, errOut)
	}
	return ExitOK, view.WriteDiff(out, rows, clusters, view.Options{Context: o.lines, Colour: o.colour(out)})
}

// writeSuggested prints, after the reports, the ignore rules --suggest-ignore asked for, one
// block per report (in -o json and yaml they are in the report, or in the summary's rows, as
// suggestedIgnore).
func (o *outputFlags) writeSuggested(out io.Writer, reps []*diff.Report) error {
	if o.suggest == "" || o.format == "json" || o.format == "yaml" {
		return nil
	}
	fence := o.format == "markdown" || o.format == outputGitHub || o.format == outputGitLab
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
