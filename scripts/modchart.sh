#!/usr/bin/env bash
# Assembles a chart published in a Git repository, and its dependencies, from the Go module proxy
# (which serves any public repository's tree by commit, the one way this machine reaches one):
# the chart's folder, with each dependency's folder copied into its charts/. The result goes to
# $HOME/.cache/helm-drift/charts, keyed by the modules' versions, and is reused. Prints its path.
#
#   scripts/modchart.sh MODULE@VERSION:PATH [MODULE@VERSION:PATH ...]
#
# The first names the chart, the others its dependencies (a subchart's folder name must be the
# dependency's name in Chart.yaml). Helm matches the dependencies by name; their versions are
# what the given commits hold, which the caller should say when it reports a measure.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: scripts/modchart.sh MODULE@VERSION:PATH [MODULE@VERSION:PATH ...]" >&2
  exit 2
fi

cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}/charts
key=$(printf '%s\n' "$@" | sha256sum | cut -c1-16)
out=$cache/$(basename "${1#*:}")-$key
if [ -f "$out/Chart.yaml" ]; then
  echo "$out"
  exit 0
fi

# dir MODULE@VERSION: the module's folder in the module cache, downloaded once.
dir() {
  local d
  d=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$d" ] || [ ! -d "$d" ]; then
    echo "modchart: $1 is not served by the module proxy (go mod download -json $1)" >&2
    exit 1
  fi
  echo "$d"
}

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
first=1
for spec in "$@"; do
  mod=${spec%%:*} path=${spec#*:}
  src=$(dir "$mod")/$path
  if [ ! -f "$src/Chart.yaml" ]; then
    echo "modchart: $mod holds no chart at $path" >&2
    exit 1
  fi
  if [ $first = 1 ]; then
    cp -r "$src" "$tmp/chart"
    chmod -R u+w "$tmp/chart" # the module cache is read-only
    first=0
  else
    mkdir -p "$tmp/chart/charts"
    rm -rf "$tmp/chart/charts/$(basename "$path")"
    cp -r "$src" "$tmp/chart/charts/"
  fi
done
chmod -R u+w "$tmp/chart"
rm -rf "$out"
mv "$tmp/chart" "$out"
echo "$out"
