package fluxtree

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
	// pending are the files set aside by readFile; seq numbers every file read, in the walk's
	// order, which objects keep once the pending ones are read (readPending).
	pending []pendingFile
	seq     map[string]int
}

// kustomizationFiles are the names kustomize reads a directory's kustomization from.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// scanFiles reads every YAML file under paths (relative to root; all of it when empty),
// skipping hidden directories (.git, .github) and what Git ignores (ignored). A file that does
// not parse is a problem; the others are still read.
func scanFiles(root string, paths []string, ignored ignoredFiles) (*scanned, error) {
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
			if rel != "." && ignored.has(rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
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

// readFile reads the objects of one YAML file: in full when it may hold an object of the Flux
// groups a walk starts from or looks up (Kustomizations, GitRepositories, ArtifactGenerators),
// else it is set aside, read in full only when the tree turns out to have no Kustomization
// (readPending). Which groups a file holds is told by the manifest package's line scanner,
// which parses a document it cannot read with certainty.
func (s *scanned) readFile(file, rel string) {
	data, err := os.ReadFile(file)
	if err != nil {
		s.problems = append(s.problems, Problem{Where: rel, Err: err})
		return
	}
	if s.seq == nil {
		s.seq = map[string]int{}
	}
	s.seq[rel] = len(s.seq)
	if !holdsFluxSource(data) {
		s.pending = append(s.pending, pendingFile{rel: rel, data: data})
		return
	}
	s.parse(rel, data)
}

// pendingFile is a file set aside by readFile.
type pendingFile struct {
	rel  string
	data []byte
}

// readPending reads the files readFile set aside, the objects then in the walk's order as if
// every file had been read at once.
func (s *scanned) readPending() {
	if len(s.pending) == 0 {
		return
	}
	for _, f := range s.pending {
		s.parse(f.rel, f.data)
	}
	s.pending = nil
	sort.SliceStable(s.objects, func(i, j int) bool { return s.seq[s.objects[i].file] < s.seq[s.objects[j].file] })
}

// holdsFluxSource reports whether a file may hold an object of a group a walk reads from the
// files themselves; true when its identities cannot be read (its full parse says why). A file
// that names none of the groups cannot: an apiVersion is the group's name as written, or, in
// YAML, written with escapes (a backslash) or through an alias of a value written in full; so
// only a file that names one, or holds a backslash, is scanned.
func holdsFluxSource(data []byte) bool {
	if !bytes.Contains(data, []byte{'\\'}) && !bytes.Contains(data, []byte(kustomizeGroup)) &&
		!bytes.Contains(data, []byte(sourceGroup)) && !bytes.Contains(data, []byte(generatorGroup)) {
		return false
	}
	st, err := manifest.Split(data)
	if err != nil {
		return true
	}
	objs, err := manifest.Objects(st)
	if err != nil {
		return true
	}
	for _, o := range objs {
		switch o.Group() {
		case kustomizeGroup, sourceGroup, generatorGroup:
			return true
		}
	}
	return false
}

// parse records the objects of a file's data.
func (s *scanned) parse(rel string, data []byte) {
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
