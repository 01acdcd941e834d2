package fluxtree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/helm-drift/helm-drift/internal/manifest"
	sigsyaml "sigs.k8s.io/yaml"
)

// rawObject is one object of a file of the tree, as written.
type rawObject struct {
	file                         string // relative to the root
	obj                          map[string]any
	group, kind, namespace, name string
}

// scanned is what the files under the searched paths hold.
type scanned struct {
	objects []rawObject
	// kustomizeDirs are the directories (relative) holding a kustomization.yaml (kustomize's
	// own, not Flux's), with the directories their resources name.
	kustomizeDirs map[string][]string
	problems      []Problem
}

// kustomizationFiles are the names kustomize reads a directory's kustomization from.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// scanFiles reads every YAML file under paths (relative to root; all of it when empty),
// skipping hidden directories (.git, .github). A file that does not parse is a problem; the
// others are still read.
func scanFiles(root string, paths []string) (*scanned, error) {
	s := &scanned{kustomizeDirs: map[string][]string{}}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		start := filepath.Join(root, p)
		if _, err := os.Stat(start); err != nil {
			return nil, fmt.Errorf("path %s: %w", p, err)
		}
		err := filepath.WalkDir(start, func(file string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, file)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel != "." && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(file, "Chart.yaml")); err == nil {
					return filepath.SkipDir // a chart: templates, not objects
				}
				return nil
			}
			name := d.Name()
			if isKustomizationFile(name) {
				s.readKustomization(file, rel)
				return nil
			}
			if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
				return nil
			}
			s.readFile(file, rel)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func isKustomizationFile(name string) bool {
	for _, k := range kustomizationFiles {
		if name == k {
			return true
		}
	}
	return false
}

// readKustomization records a kustomize directory and the local directories its resources
// and components name.
func (s *scanned) readKustomization(file, rel string) {
	dir := filepath.ToSlash(filepath.Dir(rel))
	data, err := os.ReadFile(file)
	if err != nil {
		s.problems = append(s.problems, Problem{Where: rel, Err: err})
		return
	}
	var k struct {
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
	}
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		s.problems = append(s.problems, Problem{Where: rel, Err: fmt.Errorf("not a kustomization: %w", err)})
		return
	}
	var refs []string
	for _, r := range append(k.Resources, k.Components...) {
		if strings.Contains(r, "://") || strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".yml") {
			continue
		}
		refs = append(refs, filepath.ToSlash(filepath.Join(dir, r)))
	}
	s.kustomizeDirs[dir] = refs
}

// readFile reads the objects of one YAML file.
func (s *scanned) readFile(file, rel string) {
	data, err := os.ReadFile(file)
	if err != nil {
		s.problems = append(s.problems, Problem{Where: rel, Err: err})
		return
	}
	objs, err := parseObjects(data)
	if err != nil {
		s.problems = append(s.problems, Problem{Where: rel, Err: fmt.Errorf("%w (fix the file; the rest of the tree is read)", err)})
		return
	}
	for _, o := range objs {
		o.file = rel
		s.objects = append(s.objects, o)
	}
}

// parseObjects reads a stream's objects (a List's items too), skipping empty documents and
// documents that are not objects (no apiVersion or kind: a values file, a patch's fragment).
func parseObjects(data []byte) ([]rawObject, error) {
	st, err := manifest.Split(data)
	if err != nil {
		return nil, err
	}
	var out []rawObject
	for _, d := range st.Docs {
		var m map[string]any
		if err := sigsyaml.Unmarshal(d.Body, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name(), err)
		}
		if m == nil {
			continue
		}
		items := []map[string]any{m}
		if list, ok := m["items"].([]any); ok && strings.HasSuffix(str(m, "kind"), "List") {
			items = items[:0]
			for _, it := range list {
				if im, ok := it.(map[string]any); ok {
					items = append(items, im)
				}
			}
		}
		for _, it := range items {
			av, kind := str(it, "apiVersion"), str(it, "kind")
			if av == "" || kind == "" {
				continue
			}
			meta, _ := it["metadata"].(map[string]any)
			out = append(out, rawObject{obj: it, group: groupOf(av), kind: kind, namespace: str(meta, "namespace"), name: str(meta, "name")})
		}
	}
	return out, nil
}

// str reads a string field of m ("" when absent).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
