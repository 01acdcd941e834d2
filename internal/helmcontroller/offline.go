package helmcontroller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loader4 "helm.sh/helm/v4/pkg/chart/v2/loader"
)

// Mirror maps a chart source's URL to another place: a registry or repository that CI can
// reach (an air-gapped mirror), or a local directory holding the charts.
type Mirror struct {
	// From is a URL prefix ("https://stefanprodan.github.io/podinfo", "oci://quay.io/jetstack").
	From string
	// To replaces it: a URL ("oci://127.0.0.1:5000/charts") or a directory, which holds the
	// chart itself (its Chart.yaml or a .tgz) or one directory or .tgz per chart name.
	To string
}

// ParseMirror reads --chart-source's FROM=TO.
func ParseMirror(s string) (Mirror, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok || from == "" || to == "" {
		return Mirror{}, fmt.Errorf("--chart-source %q: want FROM=TO, e.g. https://charts.example.com=oci://mirror:5000/charts or oci://quay.io/jetstack=./charts", s)
	}
	if !strings.Contains(to, "://") {
		abs, err := filepath.Abs(to)
		if err != nil {
			return Mirror{}, err
		}
		if _, err := os.Stat(abs); err != nil {
			return Mirror{}, fmt.Errorf("--chart-source %q: %w", s, err)
		}
		to = abs
	}
	return Mirror{From: strings.TrimSuffix(from, "/"), To: strings.TrimSuffix(to, "/")}, nil
}

// mirrored is url after the longest mirror whose From it starts with; local says the result
// is a directory.
func (o ChartOptions) mirrored(url string) (out string, local bool) {
	url = strings.TrimSuffix(url, "/")
	best := -1
	for i, m := range o.Mirrors {
		if (url == m.From || strings.HasPrefix(url, m.From+"/")) && (best < 0 || len(m.From) > len(o.Mirrors[best].From)) {
			best = i
		}
	}
	if best < 0 {
		return url, false
	}
	m := o.Mirrors[best]
	out = m.To + strings.TrimPrefix(url, m.From)
	return out, !strings.Contains(m.To, "://")
}

// loadLocal loads chart name from dir (the chart itself, dir/name, or dir/name-*.tgz), and
// checks its version against constraint ("" or "*": any).
func loadLocal(dir, name, constraint string) (*chartv2.Chart, error) {
	var candidates []string
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil || strings.HasSuffix(dir, ".tgz") {
		candidates = append(candidates, dir)
	}
	if name != "" {
		candidates = append(candidates, filepath.Join(dir, name))
		tgz, _ := filepath.Glob(filepath.Join(dir, name+"-*.tgz"))
		candidates = append(candidates, tgz...)
	}
	var c *semver.Constraints
	if constraint != "" && constraint != "*" {
		var err error
		if c, err = semver.NewConstraint(constraint); err != nil {
			return nil, fmt.Errorf("version %q: %w", constraint, err)
		}
	}
	var tried []string
	for _, p := range candidates {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		ch, err := loader4.Load(p)
		if err != nil {
			return nil, fmt.Errorf("%s: not a chart: %w", p, err)
		}
		if name != "" && ch.Name() != name && p != dir {
			continue
		}
		v, err := semver.NewVersion(ch.Metadata.Version)
		if c != nil && (err != nil || !c.Check(v)) {
			tried = append(tried, ch.Metadata.Version)
			continue
		}
		return ch, nil
	}
	if len(tried) > 0 {
		return nil, fmt.Errorf("the mirror %s holds %s %s, not a version matching %s", dir, name, strings.Join(tried, ", "), constraint)
	}
	return nil, fmt.Errorf("the mirror %s holds no chart %s", dir, name)
}

// ChartCache keeps charts on disk between runs, by source URL, chart and exact version (an
// OCI chart by its manifest digest too): a run whose versions are pinned asks no network.
// Indexes and tag lists are kept as well, read only when the network fails. Dir "" keeps
// nothing.
type ChartCache struct {
	Dir string
}

// key names a cache entry.
func (c *ChartCache) key(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return filepath.Join(c.Dir, hex.EncodeToString(h[:16]))
}

// read returns a cached entry (ok false when absent or no cache).
func (c *ChartCache) read(ext string, parts ...string) ([]byte, bool) {
	if c == nil || c.Dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(c.key(parts...) + ext)
	return data, err == nil
}

// write keeps an entry; a cache that cannot be written is not an error of the run.
func (c *ChartCache) write(data []byte, ext string, parts ...string) {
	if c == nil || c.Dir == "" {
		return
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return
	}
	tmp := c.key(parts...) + ext + ".tmp"
	if os.WriteFile(tmp, data, 0o644) == nil {
		_ = os.Rename(tmp, c.key(parts...)+ext)
	}
}

// exactVersion says whether a version constraint names one version ("1.2.3", "=1.2.3").
func exactVersion(v string) bool {
	_, err := semver.StrictNewVersion(strings.TrimPrefix(strings.TrimSpace(v), "="))
	return err == nil
}

// chartName is the last element of an OCI repository URL (the chart's name).
func chartName(url string) string { return path.Base(strings.TrimSuffix(url, "/")) }
