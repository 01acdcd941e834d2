package action

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/fluxtree"
)

// localChart digests what the chart of a HelmRelease's spec.chart (or of the HelmChart of the
// tree its spec.chartRef names) reads from its tree when its source is a GitRepository of this
// repository: the chart's directory and those of its
// file:// dependencies, the valuesFiles (paths in the source), and with reconcileStrategy
// Revision the tree's commit (source-controller makes it the chart version's build metadata).
// Two trees whose digests differ render the chart differently, though the HelmRelease and
// its sources read the same. "" for a chart from anywhere else; an error's text when the
// chart's directory cannot be read (the render then names it).
func localChart(h *fluxtree.HelmRelease, t *fluxtree.Tree) string {
	spec, _ := h.Object["spec"].(map[string]any)
	c, _ := spec["chart"].(map[string]any)
	cs, _ := c["spec"].(map[string]any)
	ref, _ := cs["sourceRef"].(map[string]any)
	ns := str(ref, "namespace")
	if ns == "" {
		ns = h.Namespace
	}
	if cr, _ := spec["chartRef"].(map[string]any); str(cr, "kind") == "HelmChart" {
		// A HelmChart of the tree: its spec says the same, its sourceRef in its namespace.
		if ns = str(cr, "namespace"); ns == "" {
			ns = h.Namespace
		}
		hc := h.Objects[flux.SourceGroup+"/HelmChart/"+ns+"/"+str(cr, "name")]
		cs, _ = hc["spec"].(map[string]any)
		ref, _ = cs["sourceRef"].(map[string]any)
	}
	if str(ref, "kind") != "GitRepository" {
		return ""
	}
	root, revision, err := t.GitRepository(h, ns, str(ref, "name"))
	if err != nil {
		return err.Error()
	}
	d := sha256.New()
	seen := map[string]bool{}
	var walk func(rel string)
	walk = func(rel string) {
		rel = path.Clean("/" + rel)[1:] // within the source, as source-controller's secure paths keep it
		if seen[rel] {
			return
		}
		seen[rel] = true
		dir := filepath.Join(root, filepath.FromSlash(rel))
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			r, _ := filepath.Rel(root, p)
			d.Write([]byte(filepath.ToSlash(r) + "\x00"))
			d.Write(data)
			d.Write([]byte{0})
			return nil
		})
		for _, dep := range fileDependencies(filepath.Join(dir, "Chart.yaml")) {
			walk(path.Join(rel, dep))
		}
	}
	walk(str(cs, "chart"))
	files, _ := cs["valuesFiles"].([]any)
	for _, f := range files {
		name, _ := f.(string)
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path.Clean("/" + name)[1:])))
		d.Write([]byte("valuesFile " + name + "\x00"))
		if err != nil {
			d.Write([]byte("missing"))
		}
		d.Write(data)
	}
	if str(cs, "reconcileStrategy") == "Revision" {
		d.Write([]byte("revision " + revision))
	}
	return hex.EncodeToString(d.Sum(nil))
}

// fileDependencies are the directories (relative to the chart's) of the dependencies a
// Chart.yaml declares from file:// repositories, which source-controller reads from the
// same source when it builds the chart.
func fileDependencies(chartYAML string) []string {
	data, err := os.ReadFile(chartYAML)
	if err != nil {
		return nil
	}
	var meta struct {
		Dependencies []struct {
			Repository string `json:"repository"`
		} `json:"dependencies"`
	}
	if sigsyaml.Unmarshal(data, &meta) != nil {
		return nil
	}
	var out []string
	for _, dep := range meta.Dependencies {
		if p, ok := strings.CutPrefix(dep.Repository, "file://"); ok {
			out = append(out, p)
		}
	}
	return out
}
