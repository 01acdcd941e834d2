package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// sameAsSigs fails t unless decodeYAML decodes doc as sigs.k8s.io/yaml.Unmarshal does: the
// same map, or the same error.
func sameAsSigs(t *testing.T, doc []byte) {
	t.Helper()
	var want map[string]any
	wantErr := sigsyaml.Unmarshal(doc, &want)
	got, err := decodeYAML(doc)
	if err != nil && strings.Contains(err.Error(), "written two ways") {
		return // sigs.k8s.io/yaml keeps either key, at random: refused here, and that is the test
	}
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("decodeYAML(%q) error %v; sigs.k8s.io/yaml's %v", doc, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeYAML(%q) =\n%#v\nsigs.k8s.io/yaml decodes\n%#v", doc, got, want)
	}
}

// TestDecodeYAML: the direct conversion gives what sigs.k8s.io/yaml's JSON round trip gives,
// on the values that round trip converts (numbers, YAML 1.1 booleans, keys that are not
// strings) and on those it changes or refuses, which go to sigs.k8s.io/yaml itself.
func TestDecodeYAML(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {app: a}}\ndata: {k: v}\n",
		"replicas: 3\nratio: 1.0\nhalf: 0.5\nbig: 1152921504606846977\nhuge: 18446744073709551615\nneg: -7\nexp: 1e3\noct: 0o17\nhex: 0x1F\n",
		"a: yes\nb: no\nc: on\nd: off\ne: true\nf: ~\ng: null\nh:\n",
		"1: one\n2.5: two\ntrue: three\n-3: four\n",
		"base: &b {x: 1, y: [a, b]}\nmerged:\n  <<: *b\n  z: 2\nref: *b\n",
		"when: 2026-12-03T10:00:00Z\nday: 2026-12-03\n",
		"html: \"<a href='x'>&</a>\"\nuni: \"h\\u00e9 \\U0001F600\"\nblock: |\n  line 1\n  line 2\n",
		"list:\n- 1\n- [2, 3]\n- {k: [4]}\n- ''\n- \"\"\n",
		"empty: {}\nnone: []\n",
		"negzero: -0.0\ntiny: 1e-7\nlarge: 1e21\n",
		// Left to sigs.k8s.io/yaml: changed or refused by its JSON round trip, or not a map.
		"bin: !!binary /w==\n",
		"nan: .nan\n",
		"inf: -.inf\n",
		"? [a, b]\n: complex key\n",
		"- a list\n- at the top\n",
		"just a string\n",
		"",
		"# only a comment\n",
		"a: [unclosed\n",
		"a: 1\na: 2\n",
		"\"\\xff\": non-UTF-8 key escape\n",
	} {
		sameAsSigs(t, []byte(doc))
	}
}

// TestDecodeYAMLFiles: the same on every document of this repository's YAML test data and of
// the public charts' CRDs (when ../shared/corpus is there).
func TestDecodeYAMLFiles(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/*/*/*.yaml")
	files = append(files, corpusCRDFiles()...)
	var docs int
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Split(data)
		if err != nil {
			continue
		}
		for _, d := range s.Docs {
			docs++
			t.Run(p, func(t *testing.T) { sameAsSigs(t, d.YAML()) })
		}
	}
	if docs < 100 {
		t.Errorf("%d documents checked; want at least 100", docs)
	}
}

// FuzzDecodeYAML: whatever the document, decodeYAML gives what sigs.k8s.io/yaml gives.
func FuzzDecodeYAML(f *testing.F) {
	addSeeds(f)
	f.Add([]byte("a: {1: [yes, 0x10, 1.5e3, ~, &x {b: *x}]}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) { sameAsSigs(t, doc) })
}

// TestDecodeYAMLCollidingKeys: two keys that are different YAML values but one JSON key ("0"
// as a string, 0 as a number) make a document whose meaning sigs.k8s.io/yaml picks at random:
// refused, naming the key.
func TestDecodeYAMLCollidingKeys(t *testing.T) {
	for _, doc := range []string{"!!str 0: a\n0: b\n", "spec:\n  x:\n    !!str 1: a\n    1: b\n"} {
		if _, err := decodeYAML([]byte(doc)); err == nil || !strings.Contains(err.Error(), "written two ways") {
			t.Errorf("decodeYAML(%q): %v, want the key refused", doc, err)
		}
	}
}
