package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/manifest"
)

const chart = "testdata/charts/platform"

// The rules every render test applies, and what they must do to the chart's HelmReleases:
// podinfo by namespace/name, redis and cache by label; cache keeps the mode its chart set.
var (
	ruleArgs = []string{"--drift-detection=apps/podinfo=enabled", "--drift-detection=label:tier=db=warn", "--namespace=platform"}
	wantMode = map[string]string{"apps/podinfo": "enabled", "data/redis": "warn", "data/cache": "warn"}
)

// postRendererArgs turns render flags into Helm's --post-renderer-args.
func postRendererArgs(args ...string) []string {
	var out []string
	for _, a := range args {
		out = append(out, "--post-renderer-args="+a)
	}
	return out
}

// TestInstallHookBuildsFromSource: `helm plugin install <dir>` on a copy with no binary builds
// one with go build (no download), and `helm drift version` runs it.
func TestInstallHookBuildsFromSource(t *testing.T) {
	t.Parallel() // each Helm installs its own copy of the repository
	for _, name := range []string{"helm3", "helm4"} {
		t.Run(name, func(t *testing.T) {
			h := newHelm(t, name)
			dir := filepath.Join(t.TempDir(), "helm-drift")
			if err := copyTracked(repoRoot, dir); err != nil {
				t.Fatal(err)
			}
			out, _ := h.run(t, false, nil, "plugin", "install", dir)
			if !strings.Contains(out, "helm-drift: building") || !strings.Contains(out, "helm-drift: installed") {
				t.Errorf("install did not build the binary:\n%s", out)
			}
			out, _ = h.run(t, false, nil, "drift", "version")
			for _, want := range []string{"helm-drift v0.1.0", "helm sdk: v3."} {
				if !strings.Contains(out, want) {
					t.Errorf("helm drift version: %q lacks %q", out, want)
				}
			}
			// A second plugin (Helm 4's post-renderer) reuses the binary instead of building again.
			if name == "helm4" {
				out, _ = h.run(t, false, nil, "plugin", "install", filepath.Join(dir, "plugins/drift-render"))
				if !strings.Contains(out, "using the binary already at") {
					t.Errorf("drift-render install did not reuse the binary:\n%s", out)
				}
				list, _ := h.run(t, false, nil, "plugin", "list")
				if !strings.Contains(list, "drift-render") || !strings.Contains(list, "postrenderer/v1") {
					t.Errorf("plugin list lacks drift-render as postrenderer/v1:\n%s", list)
				}
			}
		})
	}
}

// TestInstallHookWithoutGo: with no go on PATH, no binary and no release reachable, the hook
// fails with a message that says what to do, and installs nothing.
func TestInstallHookWithoutGo(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	dir := filepath.Join(t.TempDir(), "helm-drift")
	if err := copyTracked(repoRoot, dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", filepath.Join(dir, "scripts/install.sh"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "HELM_DRIFT_RELEASE_URL=http://127.0.0.1:1/none"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("install.sh without Go succeeded:\n%s", out)
	}
	for _, want := range []string{"no Go on PATH", "could not download http://127.0.0.1:1/none/SHA256SUMS", "nothing was installed", "Install Go"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the message lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bin/helm-drift")); err == nil {
		t.Errorf("a binary was installed")
	}
}

// TestHelm3PostRenderer: Helm 3 runs the binary as --post-renderer with render as its first
// argument. Only the selected HelmReleases change; every other document is byte-identical to
// `helm template` without the post-renderer.
func TestHelm3PostRenderer(t *testing.T) {
	h := newHelm(t, "helm3")
	h.installPlugins(t)
	plain, _ := h.run(t, false, nil, "template", "rel", chart, "-n", "platform")
	args := append([]string{"template", "rel", chart, "-n", "platform",
		"--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"), "--post-renderer-args=render"}, postRendererArgs(ruleArgs...)...)
	rendered, _ := h.run(t, false, nil, args...)
	compareStreams(t, plain, rendered, wantMode, true)

	// A bad rule: Helm fails, shows our message, applies nothing.
	args = []string{"template", "rel", chart, "--post-renderer", filepath.Join(pluginCopy, "bin/helm-drift"),
		"--post-renderer-args=render", "--post-renderer-args=--drift-detection=podinfo=on"}
	out, errOut := h.run(t, true, nil, args...)
	if out != "" || !strings.Contains(errOut, `unknown drift detection mode "on"`) {
		t.Errorf("stdout %q, stderr %q: want no output and the mode named", out, errOut)
	}
}

// TestHelm4PostRendererPlugin: Helm 4 runs the drift-render plugin by name, hooks included
// (strategy combined), with its postrender-filename annotations. Helm 4 re-serialises every
// document it gets back from any post-renderer, so the baseline is an identity post-renderer
// plugin (cat): against it, only the selected HelmReleases differ.
func TestHelm4PostRendererPlugin(t *testing.T) {
	h := newHelm(t, "helm4")
	h.installPlugins(t)
	identity := t.TempDir()
	if err := os.WriteFile(filepath.Join(identity, "plugin.yaml"), []byte("apiVersion: v1\ntype: postrenderer/v1\nname: identity\nversion: 0.0.1\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(t, false, nil, "plugin", "install", identity)

	base, _ := h.run(t, false, nil, "template", "rel", chart, "-n", "platform", "--post-renderer", "identity")
	args := append([]string{"template", "rel", chart, "-n", "platform", "--post-renderer", "drift-render"}, postRendererArgs(ruleArgs...)...)
	rendered, _ := h.run(t, false, nil, args...)
	compareStreams(t, base, rendered, wantMode, true)
	if !strings.Contains(rendered, `"helm.sh/hook": pre-install,pre-upgrade`) {
		t.Errorf("the hook Job did not come back through the post-renderer")
	}
	if strings.Contains(rendered, "postrender-filename") {
		t.Errorf("Helm 4 did not find its postrender-filename annotations again: they must come back untouched")
	}

	// A bad rule: Helm fails and the user sees our message on Helm's stderr, not only
	// "plugin exited with error".
	out, errOut := h.run(t, true, nil, "template", "rel", chart, "--post-renderer", "drift-render", "--post-renderer-args=--drift-detection=apps/*=maybe")
	if out != "" || !strings.Contains(errOut, `unknown drift detection mode "maybe"`) {
		t.Errorf("stdout %q, stderr %q: want no output and the mode named", out, errOut)
	}
}

// TestPipeline: `helm template | helm-drift render` for both Helm versions: only the selected
// HelmReleases change, every other document (the comment-only one included) is byte-identical.
func TestPipeline(t *testing.T) {
	for _, name := range []string{"helm3", "helm4"} {
		t.Run(name, func(t *testing.T) {
			h := newHelm(t, name)
			h.installPlugins(t)
			plain, _ := h.run(t, false, nil, "template", "rel", chart, "-n", "platform")
			if !strings.Contains(plain, "# A template whose feature is switched off") {
				t.Fatalf("the chart's comment-only document is missing from helm template")
			}
			out, _ := renderBinary(t, false, []byte(plain), ruleArgs...)
			compareStreams(t, plain, out, wantMode, true)
			// The same through the CLI plugin: helm drift render.
			viaPlugin, _ := h.run(t, false, []byte(plain), append([]string{"drift", "render"}, ruleArgs...)...)
			if viaPlugin != out {
				t.Errorf("helm drift render and the binary disagree")
			}
		})
	}
}

// compareStreams checks that after differs from before only in the selected HelmReleases
// (namespace/name → mode), which gained spec.driftDetection and nothing else.
func compareStreams(t *testing.T, before, after string, want map[string]string, byteIdentical bool) {
	t.Helper()
	b, err := manifest.Split([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	a, err := manifest.Split([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Docs) != len(b.Docs) {
		t.Fatalf("%d documents before, %d after", len(b.Docs), len(a.Docs))
	}
	seen := map[string]string{}
	for i := range b.Docs {
		bd, ad := b.Docs[i], a.Docs[i]
		var bo, ao map[string]any
		if err := yaml.Unmarshal(append(append([]byte{}, bd.Sep...), bd.Body...), &bo); err != nil {
			t.Fatalf("%s: %v", bd.Name(), err)
		}
		if err := yaml.Unmarshal(append(append([]byte{}, ad.Sep...), ad.Body...), &ao); err != nil {
			t.Fatalf("%s after: %v", ad.Name(), err)
		}
		id := objectID(bo)
		if ao["kind"] == "HelmRelease" {
			mode := nested(ao, "spec", "driftDetection", "mode")
			if mode != "" {
				seen[id] = mode
			}
			if nested(bo, "spec", "driftDetection", "mode") == "" && mode != "" {
				delete(ao["spec"].(map[string]any), "driftDetection")
			}
			if _, selected := want[id]; selected {
				if diff := cmp.Diff(bo, ao); diff != "" {
					t.Errorf("%s: changed beyond spec.driftDetection (-before +after):\n%s", id, diff)
				}
				continue
			}
		}
		if byteIdentical && string(bd.Sep)+string(bd.Body) != string(ad.Sep)+string(ad.Body) {
			t.Errorf("%s (%s) is not byte-identical:\n--- before\n%s%s\n--- after\n%s%s", bd.Name(), id, bd.Sep, bd.Body, ad.Sep, ad.Body)
		}
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("drift detection modes per HelmRelease (-want +got):\n%s", diff)
	}
}

func objectID(o map[string]any) string {
	return nested(o, "metadata", "namespace") + "/" + nested(o, "metadata", "name")
}

func nested(o map[string]any, keys ...string) string {
	var cur any = o
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}
