package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// ExternalDiffEnv names the program run on the two trees, as KUBECTL_EXTERNAL_DIFF does for
// kubectl diff: its first word is the program, the others its first arguments.
const ExternalDiffEnv = "HELM_DRIFT_EXTERNAL_DIFF"

// WriteTrees writes the reports' objects that have rows (and those the upgrade prunes) as two
// directory trees under dir, live/ and chart/, one normalised YAML file per object named as
// kubectl diff names them (group.version.Kind.namespace.name), a Secret's values redacted. An
// object one side lacks has no file there. With more than one report, each release's files are
// under a directory of its own (context.namespace.release). It returns the two trees' paths.
func WriteTrees(dir string, rows []diff.SummaryRow) (live, chart string, err error) {
	live, chart = filepath.Join(dir, "live"), filepath.Join(dir, "chart")
	for _, side := range []string{live, chart} {
		if err := os.MkdirAll(side, 0o700); err != nil {
			return "", "", err
		}
	}
	for _, row := range rows {
		r := row.Report
		if r == nil {
			continue
		}
		sub := ""
		if len(rows) > 1 {
			sub = strings.TrimPrefix(row.Context+"."+r.Namespace+"."+r.Release, ".")
		}
		var views []*compare.View
		for _, o := range r.Objects {
			if len(o.Rows) > 0 && o.View != nil {
				views = append(views, o.View)
			}
		}
		for _, p := range r.Prune {
			if p.View != nil && !p.Keep {
				views = append(views, p.View)
			}
		}
		for _, v := range views {
			if err := writeSide(filepath.Join(live, sub), v.Live); err != nil {
				return "", "", err
			}
			if err := writeSide(filepath.Join(chart, sub), v.Chart); err != nil {
				return "", "", err
			}
		}
	}
	return live, chart, nil
}

func writeSide(dir string, obj map[string]any) error {
	if obj == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := sigsyaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileName(obj)), b, 0o600)
}

// fileName names an object's file as kubectl diff does: apps.v1.Deployment.apps.web,
// v1.ConfigMap.apps.settings (no namespace part for a cluster-scoped object).
func fileName(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	parts := []string{strings.ReplaceAll(apiVersion, "/", "."), kind}
	if ns != "" {
		parts = append(parts, ns)
	}
	parts = append(parts, name)
	return strings.ReplaceAll(strings.Join(parts, "."), string(filepath.Separator), "_")
}

// RunExternal writes the trees into a temporary directory, runs the program the environment
// value names on them (live first, chart second, with stdout and stderr as given) and returns
// its exit code, as kubectl diff passes its program's through. The trees are removed afterwards.
func RunExternal(ctx context.Context, command string, rows []diff.SummaryRow, stdout, stderr io.Writer) (int, error) {
	args := strings.Fields(command)
	if len(args) == 0 {
		return 0, fmt.Errorf("%s is empty: set it to a program, e.g. \"diff -u\" or \"dyff between\"", ExternalDiffEnv)
	}
	dir, err := os.MkdirTemp("", "helm-drift-diff-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	live, chart, err := WriteTrees(dir, rows)
	if err != nil {
		return 0, fmt.Errorf("writing the trees for %s: %w", ExternalDiffEnv, err)
	}
	cmd := exec.CommandContext(ctx, args[0], append(args[1:], live, chart)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", ExternalDiffEnv, command, err)
	}
	return 0, nil
}
