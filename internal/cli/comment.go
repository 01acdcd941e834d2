package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/helm-drift/helm-drift/internal/output"
	"github.com/helm-drift/helm-drift/internal/prcomment"
)

const commentUsage = `Keeps one sticky comment per pull request (GitHub) or merge request (GitLab) up to date with
a report of -o github or -o gitlab: each part (--comments splits a long report) edits the
comment that holds its marker, or creates it the first time; parts a shorter report no longer
has are deleted; the reviewers' own comments are never touched. Comments are found by the
marker, on every page of the request's comments.

Usage:
  helm drift comment [FILE] [flags]      (FILE, or stdin: the report)

In GitHub Actions it reads GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_TOKEN (with
pull-requests: write) and the pull request's number from the event; in GitLab CI,
CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID and GITLAB_TOKEN (a token with the api
scope). The token is never printed.

Examples:
  helm drift diff tree --base origin/main -o github --comments 5 | helm drift comment --marker tree
  helm drift comment report.md --platform gitlab --pr 12

The CI step: ` + docsURL + `diff-tree.md
`

// commentCmd is "comment": a report kept as sticky pull-request comments.
type commentCmd struct {
	marker, platform string
	number           int
}

func runComment(args []string, in io.Reader, out, errOut io.Writer) int {
	var c commentCmd
	fs := pflag.NewFlagSet("comment", pflag.ContinueOnError)
	fs.StringVar(&c.marker, "marker", "diff", "the name that marks this report's comments (one per report a pipeline posts: tree, upgrade, ...)")
	fs.StringVar(&c.platform, "platform", "", "github or gitlab (default: from the CI job's environment)")
	fs.IntVar(&c.number, "pr", 0, "the pull request's number, or the merge request's IID (default: from the CI job's environment)")
	if code, done := parseFlags(fs, commentUsage, args, out, errOut); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(errOut, "helm-drift comment: want one FILE (or the report on stdin), got %d\n", fs.NArg())
		return ExitError
	}
	var data []byte
	var err error
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		data, err = os.ReadFile(fs.Arg(0))
	} else {
		data, err = io.ReadAll(in)
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift comment: %v\n", err)
		return ExitError
	}
	if strings.TrimSpace(string(data)) == "" {
		fmt.Fprintln(errOut, "helm-drift comment: the report is empty: pipe -o github or -o gitlab into it")
		return ExitError
	}
	p, err := prcomment.FromEnvironment(os.Getenv, os.ReadFile, c.platform, c.number)
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift comment: %v\n", err)
		return ExitError
	}
	limit := output.GitHub.Limit
	if p.Name == "gitlab" {
		limit = output.GitLab.Limit
	}
	parts := strings.Split(string(data), "\n"+output.CommentSeparator+"\n")
	res, err := prcomment.Sync(context.Background(), p, c.marker, parts, limit)
	if res != nil {
		for _, a := range res.Actions {
			fmt.Fprintf(out, "%s #%d: %s\n", p.Repo, p.Number, a)
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "helm-drift comment: %v\n", err)
		return ExitError
	}
	return ExitOK
}
