package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// CorpusChart is one entry of ../shared/corpus/index.yaml or privileged.yaml: a public chart
// and how to install it.
type CorpusChart struct {
	// Path is the chart directory, relative to the corpus; Release and Namespace what to
	// install it as; Args the extra helm install/upgrade arguments it needs.
	Path      string   `json:"path"`
	Release   string   `json:"release"`
	Namespace string   `json:"namespace"`
	Args      []string `json:"args"`
}

// corpusLists are the corpus' chart lists, in order: index.yaml must be there, privileged.yaml
// (charts whose pods run privileged, which install only where the API server allows privileged
// containers, as the test environment does, like kubeadm and kind) is read when it is.
var corpusLists = []struct {
	name     string
	required bool
}{{"index.yaml", true}, {"privileged.yaml", false}}

// Corpus returns the public-chart corpus beside the checkout (../shared/corpus) and the charts
// of all its lists. ok is false when it is not there (a user's clone): the caller skips, or
// measures without it. With HELM_DRIFT_REQUIRE_CORPUS=1 (set by .ci/run) its absence fails the
// test instead; an unreadable or empty list always does.
func Corpus(t testing.TB) (dir string, charts []CorpusChart, ok bool) {
	t.Helper()
	dir = filepath.Join(RepoRoot(), "..", "shared", "corpus")
	for _, list := range corpusLists {
		data, err := os.ReadFile(filepath.Join(dir, list.name))
		if os.IsNotExist(err) && !list.required {
			continue
		}
		if os.IsNotExist(err) {
			if os.Getenv("HELM_DRIFT_REQUIRE_CORPUS") == "1" {
				t.Fatalf("corpus: %s/%s not found, and HELM_DRIFT_REQUIRE_CORPUS=1 says it must run", dir, list.name)
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
			t.Fatalf("corpus %s: %v", list.name, err)
		}
		if len(index.Charts) == 0 {
			t.Fatalf("corpus %s lists no charts", list.name)
		}
		charts = append(charts, index.Charts...)
	}
	return dir, charts, true
}

// Values are the values the chart's --set arguments give (its other arguments left out), as
// helm parses them.
func (c CorpusChart) Values(t testing.TB) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for i := 0; i+1 < len(c.Args); i += 2 {
		if c.Args[i] == "--set" {
			if err := strvals.ParseInto(c.Args[i+1], vals); err != nil {
				t.Fatalf("corpus %s: --set %s: %v", c.Path, c.Args[i+1], err)
			}
		}
	}
	return vals
}
