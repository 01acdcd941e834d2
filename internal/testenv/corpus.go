package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// CorpusChart is one entry of ../shared/corpus/index.yaml: a public chart and how to install it.
type CorpusChart struct {
	// Path is the chart directory, relative to the corpus; Release and Namespace what to
	// install it as; Args the extra helm install/upgrade arguments it needs.
	Path      string   `json:"path"`
	Release   string   `json:"release"`
	Namespace string   `json:"namespace"`
	Args      []string `json:"args"`
}

// Corpus returns the public-chart corpus beside the checkout (../shared/corpus) and its charts.
// ok is false when it is not there (a user's clone): the caller skips, or measures without it.
// With HELM_DRIFT_REQUIRE_CORPUS=1 (set by .ci/run) its absence fails the test instead; an
// unreadable or empty index always does.
func Corpus(t testing.TB) (dir string, charts []CorpusChart, ok bool) {
	t.Helper()
	dir = filepath.Join(RepoRoot(), "..", "shared", "corpus")
	data, err := os.ReadFile(filepath.Join(dir, "index.yaml"))
	if os.IsNotExist(err) {
		if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") == "1" {
			t.Fatalf("corpus: %s/index.yaml not found, and HELM_DRIFT_REQUIRE_CORPUS=1 says it must run", dir)
		}
		return dir, nil, false
	}
	if err != nil {
		t.Fatalf("corpus: %v", err)
	}
	var index struct {
		Charts []CorpusChart `json:"charts"`
	}
	if err := yaml.Unmarshal(data, &index); err != nil {
		t.Fatalf("corpus index.yaml: %v", err)
	}
	if len(index.Charts) == 0 {
		t.Fatal("corpus index.yaml lists no charts")
	}
	return dir, index.Charts, true
}
