package docs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestDocLinks: every relative link in README.md and docs/*.md names a file of the repository
// and, with a #fragment, a heading of that file (as GitHub makes its anchor). Links inside code
// are not links; absolute URLs are not followed.
func TestDocLinks(t *testing.T) {
	root := golden.RepoRoot()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, f := range files {
		links, err := markdownLinks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			u, err := url.Parse(l)
			if err != nil {
				t.Errorf("%s: link %q: %v", rel(root, f), l, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue
			}
			checked++
			target := f
			if u.Path != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(u.Path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q: no such file %s", rel(root, f), l, rel(root, target))
				continue
			}
			if u.Fragment == "" {
				continue
			}
			if _, ok := anchors[target]; !ok {
				anchors[target], err = headingAnchors(target)
				if err != nil {
					t.Fatal(err)
				}
			}
			if !anchors[target][u.Fragment] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", rel(root, f), l, rel(root, target), u.Fragment)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d relative links in the README and docs/; the parse found too few", checked)
	}
}

// TestGitHubAnchor: the anchors GitHub gives headings.
func TestGitHubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"`helm drift serve`: drift measured all the time":                     "helm-drift-serve-drift-measured-all-the-time",
		"`diff -o json` schema":                                               "diff--o-json-schema",
		"Set-up on a fresh machine: two commands":                             "set-up-on-a-fresh-machine-two-commands",
		"Ignore rules from field ownership: `--suggest-ignore[=flux|argocd]`": "ignore-rules-from-field-ownership---suggest-ignorefluxargocd",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

// markdownLinks returns the destinations of a Markdown file's links (GFM), code left out.
func markdownLinks(path string) ([]string, error) {
	_, doc, err := parseMarkdown(path)
	if err != nil {
		return nil, err
	}
	var links []string
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			links = append(links, string(n.Destination))
		case *ast.Image:
			links = append(links, string(n.Destination))
		}
		return ast.WalkContinue, nil
	})
	return links, err
}

// headingAnchors returns the anchors of a Markdown file's headings, as GitHub makes them (a
// repeated anchor gets -1, -2, ...).
func headingAnchors(path string) (map[string]bool, error) {
	src, doc, err := parseMarkdown(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	anchors := map[string]bool{}
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		a := githubAnchor(headingText(h, src))
		if k := seen[a]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
		return ast.WalkSkipChildren, nil
	})
	return anchors, err
}

func parseMarkdown(path string) ([]byte, ast.Node, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	return src, md.Parser().Parse(text.NewReader(src)), nil
}

// headingText is a heading's text as written, code spans included without their backticks.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(h, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			if t, ok := n.(*ast.Text); ok {
				b.Write(t.Segment.Value(src))
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

var notAnchor = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)

// githubAnchor is the anchor GitHub gives a heading: lower case, punctuation but hyphens and
// underscores dropped, each space a hyphen.
func githubAnchor(heading string) string {
	a := notAnchor.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), "")
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '-'
		}
		return r
	}, a)
}
