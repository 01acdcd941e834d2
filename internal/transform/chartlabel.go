package transform

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// chartFromLabels reads the chart's name and version from the helm.sh/chart labels
// (name-version) of the rendered objects; several different ones are ambiguous.
func chartFromLabels(st *manifest.Stream) (string, string, error) {
	seen := map[string]bool{}
	for _, d := range st.Docs {
		if !d.Contains([]byte("helm.sh/chart")) {
			continue
		}
		root, err := d.Node()
		if err != nil {
			return "", "", err
		}
		if root == nil || root.YNode().Kind != yaml.MappingNode {
			continue
		}
		for _, o := range manifest.Items(root.YNode()) {
			if v := manifest.StringMap(manifest.Lookup(manifest.Lookup(o.Node, "metadata"), "labels"))["helm.sh/chart"]; v != "" {
				seen[v] = true
			}
		}
	}
	if len(seen) == 0 {
		return "", "", errors.New("--self: no helm.sh/chart label in the rendered objects to read the chart's name and version from; give --chart-name and --chart-version")
	}
	var labels []string
	for l := range seen {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	if len(labels) > 1 {
		return "", "", fmt.Errorf("--self: the rendered objects carry several helm.sh/chart labels (%s), so the chart is ambiguous; give --chart-name and --chart-version", strings.Join(labels, ", "))
	}
	name, version, ok := splitChartLabel(labels[0])
	if !ok {
		return "", "", fmt.Errorf("--self: helm.sh/chart label %q is not NAME-VERSION; give --chart-name and --chart-version", labels[0])
	}
	return name, version, nil
}

// splitChartLabel splits "name-1.2.3-rc.1" at the first "-" after which a semantic version
// follows. Helm writes "+" in versions as "_" in labels.
func splitChartLabel(l string) (string, string, bool) {
	for i := 0; i < len(l); i++ {
		if l[i] != '-' || i == 0 {
			continue
		}
		v := strings.ReplaceAll(l[i+1:], "_", "+")
		if _, err := semver.StrictNewVersion(v); err == nil {
			return l[:i], v, true
		}
	}
	return "", "", false
}
