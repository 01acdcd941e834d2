package output

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/diff/difftest"
	"github.com/helm-drift/helm-drift/internal/golden"
)

// The mutation matrix: the chart's objects, and the cluster after five changes made out of
// band: the Deployment scaled, an env entry added by another manager, a ConfigMap deleted, an
// annotation added, a Secret's key changed (and one added).
var (
	desired = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env:
        - name: LOG_LEVEL
          value: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apps
data:
  mode: fast
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  namespace: apps
data:
  a: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
data:
  password: ` + chartPasswordB64 + `
  user: YWRtaW4=`

	live = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  managedFields:
  - manager: helm
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:env": {"k:{\"name\":\"LOG_LEVEL\"}": {}}}}}}}}
  - manager: kubectl-scale
    operation: Update
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
  - manager: sidecar-injector
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:env": {"k:{\"name\":\"INJECTED\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}
spec:
  replicas: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env:
        - name: LOG_LEVEL
          value: info
        - name: INJECTED
          value: "1"
status:
  replicas: 5
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apps
  annotations:
    edited-by: hand
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
data:
  password: ` + livePasswordB64 + `
  user: YWRtaW4=
  token: ` + liveTokenB64 + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy
  namespace: apps
data:
  old: "yes"`

	chartPassword, livePassword, liveToken = "chart-pass-1", "hunter2-from-the-cluster", "tok-9f8e7d"
	chartPasswordB64                       = base64.StdEncoding.EncodeToString([]byte(chartPassword))
	livePasswordB64                        = base64.StdEncoding.EncodeToString([]byte(livePassword))
	liveTokenB64                           = base64.StdEncoding.EncodeToString([]byte(liveToken))
)

// matrix measures the mutation matrix as an upgrade from a revision that also had the legacy
// ConfigMap (so it is pruned), keeping the views.
func matrix(t *testing.T) *diff.Report {
	t.Helper()
	legacy := "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n  namespace: apps\ndata:\n  old: \"yes\""
	cl := &difftest.Cluster{Objects: difftest.Objects(t, live)}
	rep, err := diff.Run(context.Background(), cl, diff.Input{Release: "web", Namespace: "apps", Revision: 3, Desired: desired, Previous: desired + legacy, Options: diff.Options{Normalize: diff.Server, Views: true}})
	if err != nil {
		t.Fatal(err)
	}
	rep.Stamp = diff.NewStamp(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), "testenv", "https://127.0.0.1:6443")
	return rep
}

func row(rep *diff.Report) diff.SummaryRow {
	r := diff.Summarise(rep)
	r.Report = rep
	return r
}

// TestWriteDiffGolden: the unified diff of the matrix, plain, coloured, with no context and
// with the whole objects, and the pull-request comment.
func TestWriteDiffGolden(t *testing.T) {
	rep := matrix(t)
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"plain", Options{Context: 3}},
		{"colour", Options{Context: 3, Colour: true}},
		{"context0", Options{Context: 0}},
		{"whole", Options{Context: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteDiff(&b, []diff.SummaryRow{row(rep)}, []diff.ClusterRun{{Stamp: rep.Stamp}}, tc.opt); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(golden.Root(), "view", "matrix."+tc.name+".diff"), b.String())
			if strings.Contains(b.String(), "\x1b[") != tc.opt.Colour {
				t.Errorf("colour escapes present: %v, want %v", !tc.opt.Colour, tc.opt.Colour)
			}
			noSecret(t, b.String())
		})
	}
	t.Run("github", func(t *testing.T) {
		var b bytes.Buffer
		if err := WriteComment(&b, []diff.SummaryRow{row(rep)}, []diff.ClusterRun{{Stamp: rep.Stamp}}, GitHub, Options{Context: 3, Comments: 1}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join(golden.Root(), "view", "matrix.github.md"), b.String())
		noSecret(t, b.String())
	})
}

// TestWriteDiffRows: every row of the matrix is in the diff, as a verdict leading the hunk that
// shows its field (the whole-object row and the pruned object in their headers).
func TestWriteDiffRows(t *testing.T) {
	rep := matrix(t)
	var b bytes.Buffer
	if err := WriteDiff(&b, []diff.SummaryRow{row(rep)}, []diff.ClusterRun{{Stamp: rep.Stamp}}, Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := []string{
		"# DIFFERS spec.replicas: upgrade: yes",
		"-  replicas: 5\n+  replicas: 2\n",
		"# CLUSTER-ONLY spec.template.spec.containers[name=web].env[name=INJECTED]",
		"(set by sidecar-injector)",
		"-        - name: INJECTED\n-          value: \"1\"\n",
		"# CLUSTER-ONLY metadata.annotations.edited-by",
		"-    edited-by: hand\n",
		"# ConfigMap apps/extra: CHART-ONLY 1",
		"--- /dev/null\n+++ chart\n",
		"+  a: \"1\"\n",
		"# DIFFERS data.password (redacted, 24 bytes -> 12 bytes)",
		"-  password: (redacted, 24 bytes)\n",
		"+  password: (redacted, 12 bytes, differs)\n",
		"# CLUSTER-ONLY data.token (redacted, 10 bytes)",
		"-  token: (redacted, 10 bytes)\n",
		"   user: (redacted, 5 bytes)\n", // unchanged: a context line
		"# TO PRUNE ConfigMap apps/legacy",
		"--- live\n+++ /dev/null\n",
		"-  old: \"yes\"\n",
		"release apps/web revision 3",
		`measured 2026-12-02T06:00:00Z against context "testenv" (https://127.0.0.1:6443)`,
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the diff lacks %q:\n%s", w, out)
		}
	}
	for _, o := range rep.Objects {
		for _, r := range o.Rows {
			if !strings.Contains(out, "# "+Annotation(rep, r)) {
				t.Errorf("row %s %s is not in the diff", o.Object, r.Path)
			}
		}
	}
}

// noSecret fails when out holds any of the matrix's Secret values, plain or base64.
func noSecret(t *testing.T, out string) {
	t.Helper()
	for _, v := range []string{chartPassword, livePassword, liveToken, chartPasswordB64, livePasswordB64, liveTokenB64, "YWRtaW4=", "admin"} {
		if strings.Contains(out, v) {
			t.Errorf("a Secret's value %q is in the output", v)
		}
	}
}

// TestWriteTrees: the two trees hold one file per changed object on each side that has it,
// named as kubectl diff names them, with no Secret value; diff -u runs on them and exits 1.
func TestWriteTrees(t *testing.T) {
	rep := matrix(t)
	dir := t.TempDir()
	liveDir, chartDir, err := WriteTrees(dir, []diff.SummaryRow{row(rep)})
	if err != nil {
		t.Fatal(err)
	}
	names := func(d string) string {
		es, _ := os.ReadDir(d)
		var n []string
		for _, e := range es {
			n = append(n, e.Name())
			b, _ := os.ReadFile(filepath.Join(d, e.Name()))
			noSecret(t, string(b))
		}
		return strings.Join(n, " ")
	}
	if got, want := names(liveDir), "apps.v1.Deployment.apps.web v1.ConfigMap.apps.legacy v1.ConfigMap.apps.settings v1.Secret.apps.creds"; got != want {
		t.Errorf("live/: %s, want %s", got, want)
	}
	if got, want := names(chartDir), "apps.v1.Deployment.apps.web v1.ConfigMap.apps.extra v1.ConfigMap.apps.settings v1.Secret.apps.creds"; got != want {
		t.Errorf("chart/: %s, want %s", got, want)
	}
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff program on this machine")
	}
	var out, errOut bytes.Buffer
	code, err := RunExternal(context.Background(), "diff -u -N", []diff.SummaryRow{row(rep)}, &out, &errOut)
	if err != nil || code != 1 {
		t.Fatalf("diff -u -N: exit %d, %v: %s", code, err, errOut.String())
	}
	for _, w := range []string{"-  replicas: 5", "+  replicas: 2", "-  password: (redacted, 24 bytes)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("diff -u output lacks %q:\n%s", w, out.String())
		}
	}
	noSecret(t, out.String())
	if _, err := RunExternal(context.Background(), "  ", nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), ExternalDiffEnv) {
		t.Errorf("an empty program: %v, want an error naming %s", err, ExternalDiffEnv)
	}
}

// parseGFM parses a comment as GitHub-flavoured Markdown and returns its fenced code blocks and
// its raw HTML blocks.
func parseGFM(t *testing.T, src string) (codes []string, html []string) {
	t.Helper()
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(text.NewReader([]byte(src)))
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch b := n.(type) {
		case *ast.FencedCodeBlock:
			var s strings.Builder
			for i := 0; i < b.Lines().Len(); i++ {
				seg := b.Lines().At(i)
				s.Write(seg.Value([]byte(src)))
			}
			if string(b.Language([]byte(src))) != "diff" {
				t.Errorf("a code block of language %q, want diff", b.Language([]byte(src)))
			}
			codes = append(codes, s.String())
		case *ast.HTMLBlock:
			var s strings.Builder
			for i := 0; i < b.Lines().Len(); i++ {
				seg := b.Lines().At(i)
				s.Write(seg.Value([]byte(src)))
			}
			html = append(html, s.String())
		}
		return ast.WalkContinue, nil
	})
	var out bytes.Buffer
	if err := md.Convert([]byte(src), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "<details>") != strings.Count(out.String(), "</details>") {
		t.Errorf("unbalanced <details> in the rendered comment")
	}
	return codes, html
}

// TestCommentMarkdown: the comment parses as GFM with one diff block per object, each holding
// that object's diff whole; ten times the input stays under the limit, cut at a line's end with
// a note; a backtick run in a value cannot close the fence.
func TestCommentMarkdown(t *testing.T) {
	rep := matrix(t)
	var b bytes.Buffer
	if err := WriteComment(&b, []diff.SummaryRow{row(rep)}, nil, GitHub, Options{Context: 3, Comments: 1}); err != nil {
		t.Fatal(err)
	}
	codes, _ := parseGFM(t, b.String())
	diffs, err := reportDiffs(rep, 3)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, d := range diffs {
		blocks = append(blocks, d.Text())
	}
	if len(codes) != len(blocks) {
		t.Fatalf("%d code blocks, want %d (one per object)", len(codes), len(blocks))
	}
	for i := range blocks {
		if codes[i] != blocks[i] {
			t.Errorf("code block %d:\n%s\nwant:\n%s", i, codes[i], blocks[i])
		}
	}

	// Ten times larger than the limit: many releases of many objects.
	var rows []diff.SummaryRow
	for i := 0; b.Len()*len(rows) < 10*GitHub.Limit; i++ {
		r := *rep
		r.Release = fmt.Sprintf("web-%03d", i)
		rows = append(rows, row(&r))
	}
	var big bytes.Buffer
	if err := WriteComment(&big, rows, nil, GitHub, Options{Context: 3, Comments: 1}); err != nil {
		t.Fatal(err)
	}
	if big.Len() > GitHub.Limit {
		t.Errorf("the comment is %d characters, over GitHub's %d", big.Len(), GitHub.Limit)
	}
	if !strings.Contains(big.String(), "**Truncated:**") {
		t.Errorf("no truncation note in a comment that could not hold everything")
	}
	codes, _ = parseGFM(t, big.String())
	whole := map[string]bool{}
	for _, blk := range blocks {
		for _, l := range strings.Split(blk, "\n") {
			whole[l] = true
		}
	}
	for _, c := range codes {
		for _, l := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
			if !whole[l] {
				t.Errorf("a line cut short in the truncated comment: %q", l)
			}
		}
	}
	if strings.Count(big.String(), "- **apps/web-") != len(rows) {
		t.Errorf("not every release has its summary line")
	}

	// The same, split into comments: each within the limit, every object's section whole in
	// one of them, in the same order, the truncation note only when even these do not hold it.
	var split bytes.Buffer
	if err := WriteComment(&split, rows, nil, GitHub, Options{Context: 3, Comments: 20}); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(split.String(), "\n"+CommentSeparator+"\n")
	if len(parts) < 2 {
		t.Fatalf("%d comments, want the report split", len(parts))
	}
	var sections []string
	for i, p := range parts {
		if len(p) > GitHub.Limit {
			t.Errorf("comment %d is %d characters, over GitHub's %d", i+1, len(p), GitHub.Limit)
		}
		if i > 0 && !strings.HasPrefix(p, fmt.Sprintf("### helm-drift (continued, %d)", i+1)) {
			t.Errorf("comment %d does not say it continues: %.60q", i+1, p)
		}
		c, _ := parseGFM(t, p)
		sections = append(sections, c...)
	}
	if strings.Contains(split.String(), "**Truncated:**") {
		t.Errorf("20 comments hold the report, yet a truncation note")
	}
	if want := len(blocks) * len(rows); len(sections) != want {
		t.Errorf("%d sections across the comments, want %d", len(sections), want)
	}
	for i, c := range sections {
		if c != blocks[i%len(blocks)] {
			t.Errorf("section %d is cut or out of order", i)
			break
		}
	}

	// A value holding a fence of its own.
	fenced := *rep
	fenced.Objects = append([]diff.Object(nil), rep.Objects...)
	for i, o := range fenced.Objects {
		if o.View != nil && o.View.Live != nil && o.View.Live["kind"] == "ConfigMap" {
			v := *o.View
			v.Live = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"script": "```\nrm -rf /\n```"},
				"metadata": v.Live["metadata"]}
			fenced.Objects[i].View = &v
		}
	}
	var fb bytes.Buffer
	if err := WriteComment(&fb, []diff.SummaryRow{row(&fenced)}, nil, GitLab, Options{Context: 3, Comments: 1}); err != nil {
		t.Fatal(err)
	}
	if codes, _ := parseGFM(t, fb.String()); len(codes) != len(blocks) {
		t.Errorf("with a fence in a value: %d code blocks, want %d", len(codes), len(blocks))
	}
}

// TestWriteDiff: a run over many releases and clusters is one block per release, each
// under its context, a row that could not be measured and a cluster that could not be reached
// one line each, and the run's footer once at the end.
func TestWriteDiffSummary(t *testing.T) {
	rep := matrix(t)
	first := row(rep)
	first.Context = "first"
	failed := diff.SummaryRow{Release: "api", Namespace: "apps", Context: "first", Error: "release storage: connection refused"}
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	clusters := []diff.ClusterRun{{Stamp: diff.NewStamp(at, "first", "https://a")}, {Stamp: diff.NewStamp(at, "second", "https://b"), Error: "cluster https://b unreachable"}}
	var b bytes.Buffer
	if err := WriteDiff(&b, []diff.SummaryRow{first, failed}, clusters, Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"# context first\n# ConfigMap apps/extra", "-  replicas: 5\n",
		"# first: apps/api: could not measure: release storage: connection refused\n",
		"# context second: could not measure the cluster: cluster https://b unreachable\n",
		`measured 2026-12-02T06:00:00Z against context "first" (https://a); 2026-12-02T06:00:00Z against context "second" (https://b)`} {
		if !strings.Contains(out, w) {
			t.Errorf("the summary diff lacks %q:\n%s", w, out)
		}
	}
	if strings.Count(out, "measured ") != 1 {
		t.Errorf("the footer is not printed once:\n%s", out)
	}
	noSecret(t, out)
}

// TestWriteDiffOneProperty: a CRD schema of two thousand sibling properties of one shape, one
// property's type changed in the cluster: -o diff shows that property's one line as removed and
// added with its context and nothing else, led by its row's verdict.
func TestWriteDiffOneProperty(t *testing.T) {
	crd := func(changed string) string {
		var b strings.Builder
		b.WriteString("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  conversion: {strategy: None}\n  group: example.com\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n")
		for i := range 2000 {
			typ := "string"
			if i == 1234 {
				typ = changed
			}
			fmt.Fprintf(&b, "          field%04d:\n            description: a field\n            type: %s\n", i, typ)
		}
		return b.String()
	}
	cl := &difftest.Cluster{Objects: difftest.Objects(t, crd("integer"))}
	rep, err := diff.Run(context.Background(), cl, diff.Input{Release: "web", Namespace: "apps", Revision: 1,
		Desired: crd("string"), Previous: crd("string"), Options: diff.Options{Normalize: diff.Offline, Views: true}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, []diff.SummaryRow{row(rep)}, []diff.ClusterRun{{Stamp: rep.Stamp}}, Options{Context: 3}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	var removed, added, hunks []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			hunks = append(hunks, l)
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			removed = append(removed, l)
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			added = append(added, l)
		}
	}
	if len(hunks) != 1 || len(removed) != 1 || len(added) != 1 ||
		!strings.Contains(removed[0], "type: integer") || !strings.Contains(added[0], "type: string") {
		t.Fatalf("want one hunk replacing the one line; hunks %q, removed %q, added %q:\n%s", hunks, removed, added, out)
	}
	verdict := strings.Index(out, "# DIFFERS spec.versions[0].schema.openAPIV3Schema.properties.field1234.type")
	if verdict < 0 || verdict > strings.Index(out, hunks[0]) {
		t.Errorf("the row's verdict does not lead the hunk:\n%s", out)
	}
	if n := strings.Count(out, "\n "); n != 6 {
		t.Errorf("%d context lines, want 3 on each side:\n%s", n, out)
	}
}
