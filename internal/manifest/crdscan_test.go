package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parsedCRD reads a CRD's names the way the parser does; ok is false when the document does not
// parse.
func parsedCRD(d *Document) (crdNames, bool) {
	root, err := d.Node()
	if err != nil || root == nil {
		return crdNames{}, false
	}
	spec := Lookup(root.YNode(), "spec")
	return crdNames{group: Scalar(spec, "group"), kind: Scalar(Lookup(spec, "names"), "kind"), scope: Scalar(spec, "scope")}, true
}

const crdHead = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"

// TestScanCRD: the scanner reads what the parser reads, or says it cannot (then the parser
// decides); on the plain shapes CRDs are written in, it can.
func TestScanCRD(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		ok         bool
		want       crdNames
	}{
		{"plain", "spec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Cluster\n", true, crdNames{"example.com", "Widget", "Cluster"}},
		{"quoted and commented", "spec:\n  group: \"example.com\" # g\n  scope: 'Namespaced'\n  names:\n    listKind: WidgetList\n    kind: Widget\n", true, crdNames{"example.com", "Widget", "Namespaced"}},
		{"sequence at the key's indent", "spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        description: |\n          group: not-this\n        type: object\n  names:\n    shortNames:\n    - wd\n    kind: Widget\n  group: example.com\n", true, crdNames{"example.com", "Widget", ""}},
		{"schema look-alikes below", "spec:\n  group: example.com\n  names:\n    kind: Widget\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        properties:\n          scope:\n            type: string\n          group: {type: string}\n          names:\n            kind: x\n", true, crdNames{"example.com", "Widget", ""}},
		{"block scalar with blank lines", "spec:\n  group: example.com\n  names:\n    kind: Widget\n    x: >-\n      a\n\n      kind: no\n  scope: Cluster\n", true, crdNames{"example.com", "Widget", "Cluster"}},
		{"block scalar in a sequence item", "spec:\n  versions:\n  - description: |\n      scope: no\n    name: v1\n  group: example.com\n  names:\n    kind: Widget\n", true, crdNames{"example.com", "Widget", ""}},
		{"multi-line quoted below", "spec:\n  versions:\n  - description: 'a\n  group: fake\n    '\n    name: v1\n  group: example.com\n  names:\n    kind: Widget\n", true, crdNames{"example.com", "Widget", ""}},
		{"multi-line double-quoted below", "spec:\n  versions:\n  - description: \"a \\\"\\\n  group: fake\n    \"\n    name: v1\n  group: example.com\n  names:\n    kind: Widget\n", true, crdNames{"example.com", "Widget", ""}},
		{"plain text that starts with a quote", "spec:\n  versions:\n  - description: it is\n      'tis\n    name: v1\n  group: example.com\n  names:\n    kind: Widget\n", true, crdNames{"example.com", "Widget", ""}},
		{"no spec", "status: {}\n", true, crdNames{}},
		{"deeper indent", "spec:\n    group: example.com\n    names:\n          kind: Widget\n    scope: Cluster\n", true, crdNames{"example.com", "Widget", "Cluster"}},
		// Left to the parser.
		{"flow names", "spec:\n  group: example.com\n  names: {kind: Widget}\n", false, crdNames{}},
		{"flow spec", "spec: {group: example.com}\n", false, crdNames{}},
		{"anchor", "spec:\n  group: &g example.com\n  names:\n    kind: Widget\n", false, crdNames{}},
		{"alias", "x: &k Widget\nspec:\n  group: example.com\n  names:\n    kind: *k\n", false, crdNames{}},
		{"multi-line quoted at a field's level", "spec:\n  group: \"example\n    .com\"\n  names:\n    kind: Widget\n", false, crdNames{}},
		{"more after a multi-line quote", "spec:\n  versions:\n  - name: 'v\n    1' x\n  group: example.com\n", false, crdNames{}},
		{"multi-line plain group", "spec:\n  group: example\n    .com\n  names:\n    kind: Widget\n", false, crdNames{}},
		{"duplicate group", "spec:\n  group: a\n  group: b\n", false, crdNames{}},
		{"duplicate spec", "spec:\n  group: a\nspec:\n  group: b\n", false, crdNames{}},
		{"escape", "spec:\n  group: \"ex\\u0061mple.com\"\n  names:\n    kind: Widget\n", false, crdNames{}},
		{"between levels", "spec:\n    group: a\n  scope: Cluster\n", false, crdNames{}},
		{"tab", "spec:\n\tgroup: a\n", false, crdNames{}},
		{"null", "spec:\n  group: ~\n  names:\n    kind: Widget\n", false, crdNames{}},
		{"merge key", "spec:\n  <<: {group: a}\n  names:\n    kind: Widget\n", false, crdNames{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Split([]byte(crdHead + tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := scanCRD(s.Docs[0])
			if ok != tc.ok {
				t.Fatalf("scanCRD ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if !ok {
				return
			}
			if got != tc.want {
				t.Errorf("scanCRD = %+v, want %+v", got, tc.want)
			}
			if want, parses := parsedCRD(s.Docs[0]); parses && got != want {
				t.Errorf("scanCRD = %+v, the parser reads %+v", got, want)
			}
		})
	}
}

// TestScanCRDIndentedRoot: a document whose root mapping is indented (YAML allows it) is left
// to the parser, which reads its levels (found by FuzzScanCRD: the scanner read no group).
func TestScanCRDIndentedRoot(t *testing.T) {
	s, err := Split([]byte(" apiVersion: apiextensions.k8s.io/v1\n kind: CustomResourceDefinition\n spec:\n  group: example.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := scanCRD(s.Docs[0]); ok {
		t.Errorf("scanCRD = %+v, ok; want it left to the parser", got)
	}
}

// TestScanCRDCorpus: every CRD the public charts ship in crds/ is read by the scanner, not the
// parser, and read the same.
func TestScanCRDCorpus(t *testing.T) {
	files := corpusCRDFiles()
	if len(files) == 0 {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") != "" {
			t.Fatal("HELM_DRIFT_REQUIRE_CORPUS is set but ../shared/corpus has no crds/")
		}
		t.Skip("../shared/corpus is absent (a user's clone): the public charts' CRDs are not checked")
	}
	crds := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Split(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range s.Docs {
			o, ok := scan(d, &strs{})
			if !ok || o.Kind != "CustomResourceDefinition" {
				continue
			}
			crds++
			got, ok := scanCRD(d)
			if !ok {
				t.Errorf("%s %s: the scanner leaves it to the parser", filepath.Base(p), d.Name())
				continue
			}
			want, _ := parsedCRD(d)
			if got != want || got.kind == "" || got.group == "" {
				t.Errorf("%s %s: scanner %+v, parser %+v", filepath.Base(p), d.Name(), got, want)
			}
		}
	}
	if crds < 20 {
		t.Fatalf("%d CRDs in the corpus' crds/, want at least 20", crds)
	}
	t.Logf("%d CRDs of %d files read by the scanner as the parser reads them", crds, len(files))
}

// FuzzScanCRD: wherever the CRD scanner claims certainty, the parser reads the same group, kind
// and scope; nothing panics.
func FuzzScanCRD(f *testing.F) {
	f.Add([]byte(crdHead + "spec:\n  group: example.com\n  names:\n    kind: Widget\n  scope: Cluster\n"))
	f.Add([]byte(crdHead + "spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        description: |\n          group: x\n  names:\n    kind: W\n"))
	for _, p := range corpusCRDFiles() {
		if data, err := os.ReadFile(p); err == nil && len(data) < 16<<10 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Split(in)
		if err != nil {
			return
		}
		for _, d := range s.Docs {
			got, ok := scanCRD(d)
			if !ok {
				continue
			}
			if want, parses := parsedCRD(d); parses && got != want && !strings.Contains(string(d.Body), "\x00") {
				t.Fatalf("scanner %+v, parser %+v for %q", got, want, d.Body)
			}
		}
	})
}

// corpusCRDFiles lists the YAML files under every crds/ directory of the public charts.
func corpusCRDFiles() []string {
	var files []string
	_ = filepath.WalkDir("../../../shared/corpus", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && strings.Contains(filepath.ToSlash(p), "/crds/") && !strings.Contains(filepath.ToSlash(p), "/templates/") {
			files = append(files, p)
		}
		return nil
	})
	return files
}
