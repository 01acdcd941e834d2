package cli

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyFlagsAndPrinting holds cli to its job: flags, usage, validation, exit codes
// and printing. The commands' work (Helm actions, cluster clients) lives in internal/action;
// a file of cli that imports one of these has taken work back.
func TestImportsOnlyFlagsAndPrinting(t *testing.T) {
	forbidden := []string{
		"helm.sh/helm/v3/pkg/action",
		"helm.sh/helm/v4/pkg/action",
		"k8s.io/client-go/rest",
		"k8s.io/client-go/dynamic",
		"k8s.io/client-go/kubernetes",
		"github.com/helm-drift/helm-drift/internal/live",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files: run from the package directory")
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: the work it does belongs in internal/action; cli maps flags and prints", f, path)
				}
			}
		}
	}
}
