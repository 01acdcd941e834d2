package output

import (
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

// Manifest is -o manifest: what would be installed, compared with nothing. It is no Format:
// it prints the render, not a report.
const Manifest = "manifest"

// WriteManifest prints a rendered manifest with every value of a Secret's data and
// stringData replaced by "(redacted)"; every other document is printed as rendered.
func WriteManifest(w io.Writer, text string) error {
	st, err := manifest.Split([]byte(text))
	if err != nil {
		return fmt.Errorf("the rendered manifest: %w", err)
	}
	for _, d := range st.Docs {
		if !d.Contains([]byte("Secret")) {
			continue
		}
		n, err := d.Node()
		if err != nil || n == nil || n.GetKind() != "Secret" {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			m := n.Field(field)
			if m == nil || m.Value == nil || m.Value.YNode().Kind != yaml.MappingNode {
				continue
			}
			keys, err := m.Value.Fields()
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := m.Value.SetMapField(yaml.NewStringRNode("(redacted)"), k); err != nil {
					return err
				}
			}
		}
		d.MarkChanged()
	}
	out, err := st.Bytes()
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
