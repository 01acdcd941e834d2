package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// Platform is a code host whose pull-request comments WriteComment writes.
type Platform struct {
	// Name is the output format's name: "github", "gitlab".
	Name string
	// Limit is the most characters a comment may hold.
	Limit int
}

// The platforms of -o github and -o gitlab, with their comment limits.
// xref: GitHub's REST API refuses an issue comment body over 65,536 characters; GitLab's notes
// API one over 1,000,000.
var (
	GitHub = Platform{Name: "github", Limit: 65536}
	GitLab = Platform{Name: "gitlab", Limit: 1000000}
)

// commentReserve is kept free of the limit for the truncation note.
const commentReserve = 600

// CommentSeparator is the line between two comments of -o github and gitlab (Options.Comments
// over 1): helm drift comment posts each part as its own comment.
const CommentSeparator = "<!-- helm-drift: next comment -->"

// WriteComment prints reports as pull-request comments in GitHub-flavoured Markdown (which
// GitLab renders too): what the run could not read and its notes (o.Problems, o.Notes), a
// summary line per release or HelmRelease, then a collapsible section
// per object with its unified diff. Each comment stays within p's limit; up to o.Comments of
// them (at least 1) are written, separated by CommentSeparator lines, each section whole in one
// comment where it fits in one; what does not fit in the last is left out at a line's end, and
// a note says how much and how to see all of it. The order is the reports' and their objects':
// the same input gives the same comments.
func WriteComment(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, p Platform, o Options) error {
	context, comments := o.Context, o.Comments
	c := &comment{limit: p.Limit - commentReserve, max: max(1, comments)}
	c.parts = []*strings.Builder{{}}
	c.add("### helm-drift\n\n")
	for _, list := range []struct {
		title string
		lines []string
	}{{"Could not be read or rendered", o.Problems}, {"Notes", o.Notes}} {
		if len(list.lines) == 0 {
			continue
		}
		c.add("**" + list.title + "**\n\n")
		for _, l := range list.lines {
			c.add("- " + md(oneLine(l)) + "\n")
		}
		c.add("\n")
	}
	for _, row := range rows {
		c.add(releaseLine(row) + "\n")
	}
	c.add("\n")
	for _, row := range rows {
		if row.Report == nil {
			continue
		}
		r := row.Report
		if err := c.report(r, context); err != nil {
			return err
		}
	}
	last := c.cur()
	if c.left > 0 {
		last.WriteString(fmt.Sprintf("\n> **Truncated:** %d of %d diff lines are not shown, to stay within %s's comment limit (%d characters) in %d comments. "+
			"Run `helm drift diff ... -o diff` (or `-o html`) for the whole report.\n", c.left, c.lines, p.Name, p.Limit, len(c.parts)))
	}
	if f := summaryFooter(clusters); f != "" {
		last.WriteString("\n<sub>" + htmlText(f) + "</sub>\n")
	}
	for i, part := range c.parts {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"+CommentSeparator+"\n"); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, part.String()); err != nil {
			return err
		}
	}
	return nil
}

// comment is the comments being written, each within a size.
type comment struct {
	parts []*strings.Builder
	limit int
	// max is how many comments may be written.
	max int
	// full: something did not fit in the last comment; everything after it is counted, not
	// written.
	full        bool
	lines, left int
}

// cur is the comment being written.
func (c *comment) cur() *strings.Builder { return c.parts[len(c.parts)-1] }

// next starts the next comment, when one more is allowed.
func (c *comment) next() bool {
	if len(c.parts) >= c.max {
		return false
	}
	c.parts = append(c.parts, &strings.Builder{})
	fmt.Fprintf(c.cur(), "### helm-drift (continued, %d)\n\n", len(c.parts))
	return true
}

// add writes s if it fits, in a next comment if it must, and reports whether it did.
func (c *comment) add(s string) bool {
	if c.full {
		return false
	}
	if c.cur().Len()+len(s) > c.limit && (!c.next() || c.cur().Len()+len(s) > c.limit) {
		c.full = true
		return false
	}
	c.cur().WriteString(s)
	return true
}

// releaseLine is a release's summary line: "- **apps/web** revision 3: 2 divergences (DIFFERS 1, CLUSTER-ONLY 1)".
func releaseLine(row diff.SummaryRow) string {
	name := row.Namespace + "/" + row.Release
	if row.HelmRelease != "" {
		name = "HelmRelease " + row.HelmRelease + " (release " + name + ")"
	}
	if row.Context != "" {
		name = row.Context + ": " + name
	}
	line := "- **" + md(name) + "**"
	switch {
	case row.Error != "":
		return line + ": could not measure: " + md(oneLine(row.Error))
	case row.Report != nil:
		line += ": " + md(summary(row.Report))
	default:
		line += fmt.Sprintf(": %d divergences across %d compared fields", row.Divergences, row.Compared)
	}
	if row.Next != "" {
		line += "; next reconcile: " + md(row.Next)
	}
	return line
}

// report writes one release's objects, each in a collapsible section.
func (c *comment) report(r *diff.Report, context int) error {
	diffs, err := reportDiffs(r, context)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		c.section(r.Namespace+"/"+r.Release+": "+d.title, d)
	}
	var notes []string
	for _, n := range Notes(r) {
		notes = append(notes, "- "+md(n))
	}
	if len(notes) > 0 {
		c.add(strings.Join(notes, "\n") + "\n\n")
	}
	return nil
}

// section writes one object's diff as <details>, in the next comment when it does not fit
// whole in this one's remainder (and one more is allowed); a diff too long for what is left is
// cut at a line's end, its fence and section closed.
func (c *comment) section(summary string, d *unified) {
	body := strings.Split(strings.TrimSuffix(d.Text(), "\n"), "\n")
	c.lines += len(body)
	fence := fenceFor(body)
	open := "<details><summary>" + htmlText(summary) + "</summary>\n\n" + fence + "diff\n"
	closing := fence + "\n\n</details>\n\n"
	need := len(open) + len(closing)
	for _, l := range body {
		need += len(l) + 1
	}
	if !c.full && c.cur().Len()+need > c.limit && c.cur().Len() > 0 {
		c.next()
	}
	if c.full || c.cur().Len()+len(open)+len(closing) > c.limit {
		c.full = true
		c.left += len(body)
		return
	}
	text := c.cur()
	text.WriteString(open)
	room := c.limit - text.Len() - len(closing)
	for i, l := range body {
		if len(l)+1 > room {
			c.full = true
			c.left += len(body) - i
			break
		}
		text.WriteString(l + "\n")
		room -= len(l) + 1
	}
	text.WriteString(closing)
}

// fenceFor is a code fence longer than any run of backticks in lines, so that no line of the
// diff can close it.
func fenceFor(lines []string) string {
	longest := 0
	for _, l := range lines {
		run := 0
		for _, r := range l {
			if r == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// md escapes the characters Markdown would read as markup in a line of text.
func md(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "|", `\|`, "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// htmlText escapes text for an HTML element's content (quotes need no escaping there).
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func init() {
	for i, p := range []Platform{GitHub, GitLab} {
		f := func(w io.Writer, rows []diff.SummaryRow, clusters []diff.ClusterRun, o Options) error {
			return WriteComment(w, rows, clusters, p, o)
		}
		register(Format{Name: p.Name, Rank: 6 + i, Help: "a pull-request comment", Report: sideBySide(f), Summary: f, Sides: true})
	}
}
