#!/usr/bin/env bash
# The main job, on the bundled example chart (testdata/charts/platform): installs helm-drift as
# a Helm 3 and a Helm 4 plugin into scratch Helm homes, renders the chart with and without the
# post-renderer, and shows what changed. Needs only Go; helm is built by scripts/tools.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$root"
bin=$(bash scripts/tools.sh)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
chart=testdata/charts/platform
rules=(--drift-detection=apps/podinfo=enabled --drift-detection=label:tier=db=warn --namespace=platform --verbose)

for v in 3 4; do
  export HELM_CONFIG_HOME=$scratch/h$v/config HELM_CACHE_HOME=$scratch/h$v/cache HELM_DATA_HOME=$scratch/h$v/data
  unset HELM_PLUGINS
  helm="$bin/helm$v"
  echo "== Helm $v: $("$helm" version --short)"
  echo "\$ helm plugin install $root"
  "$helm" plugin install "$root" | sed 's/^/  /'
  args=()
  for r in "${rules[@]}"; do args+=("--post-renderer-args=$r"); done
  if [ "$v" = 3 ]; then
    echo "\$ helm template rel $chart -n platform --post-renderer $root/bin/helm-drift --post-renderer-args=render ${args[*]}"
    "$helm" template rel "$chart" -n platform > "$scratch/plain.yaml"
    "$helm" template rel "$chart" -n platform --post-renderer "$root/bin/helm-drift" --post-renderer-args=render "${args[@]}" > "$scratch/rendered.yaml"
  else
    "$helm" plugin install "$root/plugins/drift-render" | sed 's/^/  /'
    # Helm 4 re-serialises every document a post-renderer hands back (kyaml), so the baseline
    # is the same render through an identity post-renderer plugin.
    mkdir -p "$scratch/identity"
    printf 'apiVersion: v1\ntype: postrenderer/v1\nname: identity\nversion: 0.0.1\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: cat\n' > "$scratch/identity/plugin.yaml"
    "$helm" plugin install "$scratch/identity" >/dev/null
    echo "\$ helm template rel $chart -n platform --post-renderer drift-render ${args[*]}"
    "$helm" template rel "$chart" -n platform --post-renderer identity > "$scratch/plain.yaml"
    "$helm" template rel "$chart" -n platform --post-renderer drift-render "${args[@]}" > "$scratch/rendered.yaml"
  fi
  if [ "$v" = 3 ]; then
    echo "-- what the post-renderer changed (diff against helm template without it):"
  else
    echo "-- what the post-renderer changed (diff against the same render through an identity post-renderer):"
  fi
  diff -u "$scratch/plain.yaml" "$scratch/rendered.yaml" | sed -n '/^@@/,$p' | grep -E '^[-+@]' | grep -v '^+$' | head -40 || true
  echo
done
