package e2e

import (
	"os"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/output"

	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// corpusTable collects chart × Helm × command × mode → divergences, printed at the end.
type corpusTable struct {
	mu   sync.Mutex
	rows map[string]map[string]string // chart/helm → column → cell
}

func (c *corpusTable) set(row, col, cell string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows[row] == nil {
		c.rows[row] = map[string]string{}
	}
	c.rows[row][col] = cell
}

var corpusColumns = []string{"release offline", "release server", "upgrade offline", "upgrade server", "mutation", "CRDs edited"}

func (c *corpusTable) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| chart / helm | %s |\n|---|%s\n", strings.Join(corpusColumns, " | "), strings.Repeat("---|", len(corpusColumns)))
	names := make([]string, 0, len(c.rows))
	for n := range c.rows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cells := make([]string, len(corpusColumns))
		for i, col := range corpusColumns {
			cells[i] = c.rows[n][col]
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", n, strings.Join(cells, " | "))
	}
	return b.String()
}

// TestCorpus is the promise on charts nobody here wrote: every chart of ../shared/corpus,
// installed fresh with the real Helm 3 and Helm 4, shows 0 divergences in diff release and
// diff upgrade (same values) in offline and server normalisation; then one label value edited
// by another field manager is found as exactly one DIFFERS row. Nothing here names a chart:
// what is mutated is chosen from each release's own manifest.
func TestCorpus(t *testing.T) {
	if cluster == nil {
		t.Skip("e2e: no test environment (-short)")
	}
	dir, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Skipf("corpus: %s not found (the public-chart corpus sits beside the checkout in CI; a clone without it skips this test)", dir)
	}
	table := &corpusTable{rows: map[string]map[string]string{}}
	t.Cleanup(func() {
		t.Logf("corpus: divergences on a fresh install (mutation: rows found for one edited label)\n%s", table)
	})
	for _, c := range charts {
		t.Run(c.Path, func(t *testing.T) {
			t.Parallel()
			// One Helm after the other, each uninstalled before the next: both install the same
			// cluster-scoped objects.
			for _, helmName := range []string{"helm3", "helm4"} {
				corpusOne(t, dir, c, helmName, table)
			}
		})
	}
}

func corpusOne(t *testing.T, dir string, c testenv.CorpusChart, helmName string, table *corpusTable) {
	h := clusterHelm(t, helmName)
	row := c.Path + " / " + helmName
	// The index's namespace for both: a chart's CRDs kept by helm.sh/resource-policy outlive the
	// first uninstall, and Helm adopts them only into the release (name and namespace) they name.
	ns := c.Namespace
	chart := filepath.Join(dir, c.Path)
	install := append([]string{"install", c.Release, chart, "-n", ns, "--create-namespace", "--no-hooks", "--timeout", "2m"}, c.Args...)
	h.run(t, false, nil, install...)
	defer uninstallAndWait(t, h, c.Release, ns)
	for _, cmd := range []string{"release", "upgrade"} {
		for _, mode := range []string{"offline", "server"} {
			args := []string{"release", c.Release, "-n", ns, "--normalize", mode}
			if cmd == "upgrade" {
				args = append([]string{"upgrade", c.Release, chart, "-n", ns, "--normalize", mode}, c.Args...)
			}
			rep, out, code := zooDiff(t, args...)
			table.set(row, cmd+" "+mode, fmt.Sprint(rep.Divergences))
			if code != 0 || rep.Divergences != 0 || rep.WillFail != 0 {
				table.set(row, cmd+" "+mode, fmt.Sprintf("%d (exit %d, %d will fail)", rep.Divergences, code, rep.WillFail))
				t.Errorf("%s: diff %s: exit %d, %d divergences across %d fields, %d objects WILL-FAIL (want 0: no false refusal)\n%s", helmName, strings.Join(args, " "), code, rep.Divergences, rep.Compared, rep.WillFail, out)
			}
		}
	}
	// The mutation: a label value the chart states, edited by another field manager.
	obj, key := labelToEdit(t, h, c.Release, ns)
	if obj == nil {
		table.set(row, "mutation", "no label")
		t.Errorf("%s: no object of the release states a label to edit", helmName)
		return
	}
	gvk := obj.GroupVersionKind()
	ri, err := resourceClient(obj)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"edited-out-of-band"}}}`, key)
	_, rerr := ri.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "corpus-mutation"})
	if rerr != nil {
		t.Fatalf("%s: patch %s %s: %v", helmName, gvk.Kind, obj.GetName(), rerr)
	}
	for _, mode := range []string{"offline", "server"} {
		rep, out, _ := zooDiff(t, "release", c.Release, "-n", ns, "--normalize", mode)
		var found []string
		for _, o := range rep.Objects {
			for _, d := range o.Rows {
				found = append(found, o.Object+"|"+d.Class+"|"+d.Path)
			}
		}
		want := "|DIFFERS|metadata.labels." + key
		if len(found) != 1 || !strings.HasSuffix(found[0], want) || !strings.Contains(found[0], obj.GetName()) {
			t.Errorf("%s: after editing label %s of %s %s, diff release --normalize %s found %v, want one row ...%s\n%s", helmName, key, gvk.Kind, obj.GetName(), mode, found, want, out)
		}
		table.set(row, "mutation", fmt.Sprintf("%d DIFFERS", len(found)))
	}
	corpusViews(t, helmName, c.Release, ns, key)
	if helmName == "helm4" {
		corpusCRDs(t, h, helmName, c.Release, chart, ns, c.Args, key, table, row)
	}
}

// corpusViews checks the line views of a corpus release whose label key was edited: -o diff
// has the one hunk, led by its verdict; -o github is GitHub-flavoured Markdown (parsed with
// goldmark) with one collapsible diff block holding that hunk, within GitHub's comment limit;
// --suggest-ignore suggests no rule for an edit by a manager it cannot tell.
func corpusViews(t *testing.T, helmName, release, ns, key string) {
	t.Helper()
	args := []string{"diff", "release", release, "-n", ns, "--kubeconfig", cluster.Kubeconfig, "--normalize", "offline"}
	out, errOut, code := helmDrift("", append(args, "-o", "diff")...)
	if code != 2 || strings.Count(out, "\n@@ ") != 1 || !strings.Contains(out, "# DIFFERS metadata.labels."+key) ||
		!strings.Contains(out, ": edited-out-of-band\n") {
		t.Errorf("%s: -o diff: exit %d, want 2 and one hunk for label %s:\n%s%s", helmName, code, key, out, errOut)
	}
	out, errOut, code = helmDrift("", append(args, "-o", "github")...)
	if code != 2 || len(out) > output.GitHub.Limit {
		t.Errorf("%s: -o github: exit %d, %d characters (limit %d)\n%s", helmName, code, len(out), output.GitHub.Limit, errOut)
	}
	src := []byte(out)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var blocks []string
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if b, ok := n.(*ast.FencedCodeBlock); ok && entering && string(b.Language(src)) == "diff" {
			var s strings.Builder
			for i := 0; i < b.Lines().Len(); i++ {
				seg := b.Lines().At(i)
				s.Write(seg.Value(src))
			}
			blocks = append(blocks, s.String())
		}
		return ast.WalkContinue, nil
	})
	if len(blocks) != 1 || !strings.Contains(blocks[0], "+    "+key+": ") || strings.Count(out, "<details>") != 1 || strings.Count(out, "</details>") != 1 {
		t.Errorf("%s: -o github: %d diff blocks, want one with the label's hunk in one <details>:\n%s", helmName, len(blocks), out)
	}
	// The edit's manager is neither a known controller nor a person's tool: no rule, and said so.
	out, errOut, code = helmDrift("", append(args, "--suggest-ignore")...)
	if code != 2 || !strings.Contains(out, ": 0 rules for release ") || !strings.Contains(out, "metadata.labels."+key+": cannot tell whether corpus-mutation is a controller or a person") {
		t.Errorf("%s: --suggest-ignore: exit %d, want 0 rules and the unknown manager named:\n%s%s", helmName, code, out, errOut)
	}
}

// releaseObjects are the objects of the release's stored manifest, in manifest order, each
// with its namespace (the release's for a namespaced kind that names none).
func releaseObjects(t *testing.T, h *helmCLI, release, ns string) []*unstructured.Unstructured {
	t.Helper()
	text, _ := h.run(t, false, nil, "get", "manifest", release, "-n", ns)
	objs := manifestObjects(t, text)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		m, err := o.Decode()
		if err != nil || o.Name == "" {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetNamespace() == "" && namespacedKind(u.GroupVersionKind()) {
			u.SetNamespace(ns)
		}
		out = append(out, u)
	}
	return out
}

// labelToEdit picks, from the release's stored manifest, the first object (in manifest order)
// of a kind the diff reads that states a label other than the ones Helm writes itself.
func labelToEdit(t *testing.T, h *helmCLI, release, ns string) (*unstructured.Unstructured, string) {
	t.Helper()
	for _, u := range releaseObjects(t, h, release, ns) {
		if u.GetKind() == "Secret" || u.GetKind() == "CustomResourceDefinition" {
			continue
		}
		keys := make([]string, 0)
		for k := range u.GetLabels() {
			if k != "app.kubernetes.io/managed-by" && !strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if len(keys) > 0 {
			return u, keys[0]
		}
	}
	return nil, ""
}

// resourceClient reaches u's kind, in u's namespace when it has one.
func resourceClient(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	m, err := cluster.Mapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
	if err != nil {
		return nil, err
	}
	if u.GetNamespace() != "" {
		return cluster.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return cluster.Dynamic.Resource(m.Resource), nil
}

func namespacedKind(gvk schema.GroupVersionKind) bool {
	m, err := cluster.Mapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && m.Scope.Name() == "namespace"
}

// uninstallAndWait uninstalls a release and waits until every object it stored is gone (a CRD
// takes a while: its custom resources are cleaned up first), except those kept by
// helm.sh/resource-policy: keep, so that the next install of the same chart starts clean.
func uninstallAndWait(t *testing.T, h *helmCLI, release, ns string) {
	t.Helper()
	objs := releaseObjects(t, h, release, ns)
	h.run(t, false, nil, "uninstall", release, "-n", ns, "--no-hooks")
	started := time.Now()
	deadline := started.Add(2 * time.Minute)
	for _, u := range objs {
		if u.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
			continue
		}
		ri, err := resourceClient(u)
		if err != nil {
			continue // the kind went with a CRD of the release
		}
		for {
			live, gerr := ri.Get(context.Background(), u.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) || gerr != nil && time.Now().After(deadline) {
				break
			}
			// The test environment runs no kube-controller-manager: what its controllers would
			// do to release a deleted object (the PVC protection controller, with no pod using
			// the claim) is done here. A CRD's cleanup finalizer is the API server's, but on this
			// environment it can stall behind an aggregated API with no backend (a chart's
			// metrics APIService): after 15 s it is released too. The release's custom
			// resources are gone with the uninstall; nothing of them needs cleaning.
			stuck := u.GetKind() != "CustomResourceDefinition" || time.Since(started) > 15*time.Second
			if gerr == nil && live.GetDeletionTimestamp() != nil && len(live.GetFinalizers()) > 0 && stuck {
				ri.Patch(context.Background(), u.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
			if time.Now().After(deadline) {
				t.Fatalf("uninstall %s: %s %s still there after 2 minutes", release, u.GetKind(), u.GetName())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// crdGVR is the resource of CustomResourceDefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// corpusCRDs edits, in the cluster, every description of every CRD a corpus release installed
// (from the chart's crds/ and from its manifest): thousands of changed lines in CRDs of tens of
// thousands. diff upgrade then reports exactly those fields; -o diff prints them (the line view
// stays near-linear on schemas this size); -o github stays within GitHub's comment limit and,
// when the diff is longer than that, says what it left out. The label the mutation above
// edited is still edited. The CRDs are put back afterwards.
func corpusCRDs(t *testing.T, h *helmCLI, helmName, release, chart, ns string, args []string, label string, table *corpusTable, row string) {
	t.Helper()
	names := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(chart, "crds", "*.y*ml"))
	sub, _ := filepath.Glob(filepath.Join(chart, "charts", "*", "crds", "*.y*ml"))
	for _, f := range append(files, sub...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var u struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if sigsyaml.Unmarshal([]byte(doc), &u) == nil && u.Kind == "CustomResourceDefinition" {
				names[u.Metadata.Name] = true
			}
		}
	}
	for _, u := range releaseObjects(t, h, release, ns) {
		if u.GetKind() == "CustomResourceDefinition" {
			names[u.GetName()] = true
		}
	}
	if len(names) == 0 {
		table.set(row, "CRDs edited", "no CRDs")
		return
	}
	ctx := context.Background()
	crds := cluster.Dynamic.Resource(crdGVR)
	edited := 0
	for name := range names {
		live, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: CRD %s: %v", helmName, name, err)
		}
		original, _, _ := unstructured.NestedFieldCopy(live.Object, "spec")
		// Put back when this check ends, before the release is uninstalled and the next run
		// installs the same CRDs.
		defer func() {
			cur, err := crds.Get(context.Background(), name, metav1.GetOptions{})
			if err == nil {
				_ = unstructured.SetNestedField(cur.Object, original, "spec")
				_, err = crds.Update(context.Background(), cur, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("%s: putting CRD %s back: %v", helmName, name, err)
			}
		}()
		n := rewordDescriptions(live.Object["spec"])
		if n == 0 {
			continue
		}
		if _, err := crds.Update(ctx, live, metav1.UpdateOptions{FieldManager: "corpus-crd-edit"}); err != nil {
			t.Fatalf("%s: CRD %s: %v", helmName, name, err)
		}
		edited += n
	}
	table.set(row, "CRDs edited", fmt.Sprintf("%d descriptions in %d CRDs", edited, len(names)))
	upgrade := append([]string{"upgrade", release, chart, "-n", ns, "--normalize", "offline"}, args...)
	rep, out, code := zooDiff(t, upgrade...)
	rows, other := 0, []string(nil)
	for _, o := range rep.Objects {
		for _, d := range o.Rows {
			switch {
			case d.Class == "DIFFERS" && strings.HasSuffix(d.Path, ".description"):
				rows++
			case d.Path == "metadata.labels."+label:
			default:
				other = append(other, o.Object+" "+d.Class+" "+d.Path)
			}
		}
	}
	if code != 2 || rows != edited || len(other) > 0 {
		t.Errorf("%s: %d CRD descriptions edited: diff upgrade exit %d, %d description rows, other rows %v\n%.3000s", helmName, edited, code, rows, other, out)
	}
	view := append([]string{"diff"}, upgrade...)
	view = append(view, "--kubeconfig", cluster.Kubeconfig)
	lines, errOut, code := helmDrift("", append(view, "-o", "diff")...)
	// "(edited" once per description at least: YAML folds a long one where the words allow.
	if code != 2 || strings.Count(lines, "(edited") < edited {
		t.Errorf("%s: -o diff: exit %d, %d edited descriptions shown, want %d:\n%.2000s%s", helmName, code, strings.Count(lines, "(edited"), edited, lines, errOut)
	}
	comment, errOut, code := helmDrift("", append(view, "-o", "github")...)
	truncated := strings.Contains(comment, "**Truncated:**")
	if code != 2 || len(comment) > output.GitHub.Limit || len(lines) > output.GitHub.Limit && !truncated {
		t.Errorf("%s: -o github of a %d-character diff: exit %d, %d characters (limit %d), truncation note %v\n%s", helmName, len(lines), code, len(comment), output.GitHub.Limit, truncated, errOut)
	}
}

// rewordDescriptions prefixes every description string under v with "(edited out of band) "
// and returns how many it changed.
func rewordDescriptions(v any) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "description" {
				t[k] = "(edited out of band) " + s
				n++
				continue
			}
			n += rewordDescriptions(e)
		}
	case []any:
		for _, e := range t {
			n += rewordDescriptions(e)
		}
	}
	return n
}
