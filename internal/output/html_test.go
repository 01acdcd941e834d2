package output

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// TestWriteHTML: -o html of the mutation matrix, one release and a run over two clusters: a
// golden page that parses as HTML and renders back to the same tree, every row and every line
// of every hunk in it, and no Secret value.
func TestWriteHTML(t *testing.T) {
	rep := matrix(t)
	var one bytes.Buffer
	if err := WriteReport(&one, rep, "html", Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(golden.Root(), "view", "matrix.html"), one.String())

	rows, clusters := summaryRows()
	r := row(rep)
	r.Context = "prod-eu"
	rows = append([]diff.SummaryRow{r}, rows...)
	var many bytes.Buffer
	if err := WriteSummary(&many, rows, clusters, "html", Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(golden.Root(), "view", "summary.html"), many.String())

	var d bytes.Buffer
	if err := WriteDiff(&d, []diff.SummaryRow{row(rep)}, nil, Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"one release": one.String(), "a run over many": many.String()} {
		noSecret(t, page)
		doc, err := html.Parse(strings.NewReader(page))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back bytes.Buffer
		if err := html.Render(&back, doc); err != nil {
			t.Fatal(err)
		}
		again, err := html.Parse(bytes.NewReader(back.Bytes()))
		if err != nil {
			t.Fatalf("%s: the rendered tree does not parse: %v", name, err)
		}
		var b2 bytes.Buffer
		html.Render(&b2, again)
		if b2.String() != back.String() {
			t.Errorf("%s: the page does not survive a parse and render round trip", name)
		}
		text := html.UnescapeString(page)
		for _, o := range rep.Objects {
			for _, row := range o.Rows {
				field, _, _, upgrade := cells(row)
				if !strings.Contains(text, field) || !strings.Contains(text, upgrade) {
					t.Errorf("%s: row %s %s is not on the page", name, o.Object, field)
				}
			}
		}
		// Every line of -o diff's hunks is a line of the page's diffs.
		for _, l := range strings.Split(d.String(), "\n") {
			if len(l) > 1 && (l[0] == '-' || l[0] == '+' || l[0] == ' ') && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
				if !strings.Contains(text, ">"+l+"</span>") {
					t.Errorf("%s: the diff line %q is not on the page", name, l)
				}
			}
		}
	}
	for _, w := range []string{`<a href="#prod-eu-release-apps-web">web</a>`, `<section class="release" id="prod-eu-release-apps-web">`, "<th><button type=\"button\" data-sort=\"text\">Context</button></th>", `<details class="lazy">`} {
		if !strings.Contains(many.String(), w) {
			t.Errorf("the page over many releases lacks %q", w)
		}
	}
}

// TestHTMLLinkOfManagedRelease: a release a HelmRelease manages, measured as a release (diff
// release), links from the table to its own section (kind release); measured by diff
// helmrelease, as the HelmRelease.
func TestHTMLLinkOfManagedRelease(t *testing.T) {
	hrefs := regexp.MustCompile(`href="#([^"]+)"`)
	for name, tc := range map[string]struct {
		next *flux.Next
		want string
	}{
		"diff release":     {nil, "release-shop-web"},
		"diff helmrelease": {&flux.Next{Action: flux.NextNothing}, "helmrelease-flux-system-web"},
	} {
		rep := &diff.Report{Release: "web", Namespace: "shop", HelmRelease: "flux-system/web", Next: tc.next,
			Counts: map[compare.Class]int{}, Objects: []diff.Object{}, Prune: []diff.Prune{}}
		row := diff.Summarise(rep)
		row.Report = rep
		var b bytes.Buffer
		if err := WriteSummary(&b, []diff.SummaryRow{row}, nil, "html", Options{Context: 3}); err != nil {
			t.Fatal(err)
		}
		links := hrefs.FindAllStringSubmatch(b.String(), -1)
		if len(links) != 1 || links[0][1] != tc.want || !strings.Contains(b.String(), `id="`+tc.want+`"`) {
			t.Errorf("%s: links %q, want one to #%s, the id of its section", name, links, tc.want)
		}
	}
}
