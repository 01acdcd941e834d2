package action

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/postrender"
	helmcli4 "helm.sh/helm/v4/pkg/cli"
	postrenderer4 "helm.sh/helm/v4/pkg/postrenderer"
)

// ResolvePostRenderer resolves --post-renderer as the two Helms do: a path (it holds a path
// separator) is an executable, as Helm 3 takes it; a name is a Helm 4 postrenderer/v1 plugin
// of that name in Helm 4's plugins directory (HELM_PLUGINS, else HELM_DATA_HOME/plugins), run
// with its runtime config and args, as Helm 4 runs it; a name no such plugin has is an
// executable on PATH, as Helm 3 finds it. Both kinds have Run(*bytes.Buffer), the interface
// either SDK takes.
func ResolvePostRenderer(name string, args []string) (postrender.PostRenderer, error) {
	if !strings.ContainsRune(name, filepath.Separator) {
		pr, perr := postrenderer4.NewPostRendererPlugin(helmcli4.New(), name, args...)
		if perr == nil {
			return pr, nil
		}
		if _, err := exec.LookPath(name); err != nil {
			return nil, &InputError{fmt.Errorf("--post-renderer %s: neither a Helm 4 post-renderer plugin (%v) nor an executable on PATH", name, perr)}
		}
	}
	pr, err := postrender.NewExec(name, args...)
	if err != nil {
		return nil, &InputError{fmt.Errorf("--post-renderer: %w", err)}
	}
	return pr, nil
}
