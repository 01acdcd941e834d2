#!/usr/bin/env bash
# Builds the real tools the tests and benchmarks use, from the Go module proxy only, into a cache
# outside the repository keyed by version. Reuses what is already built. Prints the bin directory.
#
#   scripts/tools.sh            build helm v3, helm v4, kustomize, helm-diff and dyff (if missing); print the bin dir
#   scripts/tools.sh helm3      build one of them
set -euo pipefail

HELM3_VERSION=${HELM3_VERSION:-v3.22.0}
HELM4_VERSION=${HELM4_VERSION:-v4.3.1}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.1}
HELM_DIFF_VERSION=v3.13.2 # pinned by scripts/tools/helm-diff/go.mod
DYFF_VERSION=${DYFF_VERSION:-v1.12.0}  # the external diff program of the -o diff tests (HELM_DRIFT_EXTERNAL_DIFF)

cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}
bin=$cache/bin
mkdir -p "$bin"

# build NAME VERSION PACKAGE: go install PACKAGE@VERSION into $bin/NAME-VERSION, once.
build() {
  local name=$1 version=$2 pkg=$3
  local out=$bin/$name-$version
  if [ -x "$out" ]; then return 0; fi
  local tmp
  tmp=$(mktemp -d)
  echo "building $name $version from the Go module proxy (cached at $out)..." >&2
  local start=$SECONDS
  GOBIN=$tmp GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath "$pkg@$version" >&2
  mv "$tmp"/* "$out"   # go install wrote exactly one binary
  rm -rf "$tmp"
  echo "built $name $version in $((SECONDS - start))s" >&2
}

# build_wrapped NAME VERSION DIR PACKAGE: go build PACKAGE inside the wrapper module DIR (which pins
# it) into $bin/NAME-VERSION, once. For modules the proxy serves by version only.
build_wrapped() {
  local name=$1 version=$2 dir=$3 pkg=$4
  local out=$bin/$name-$version
  if [ -x "$out" ]; then return 0; fi
  echo "building $name $version from the Go module proxy (cached at $out)..." >&2
  local start=$SECONDS
  (cd "$(dirname "$0")/$dir" && GONOSUMDB=github.com/databus23 CGO_ENABLED=0 go build -trimpath -o "$out.tmp" "$pkg" >&2)
  mv "$out.tmp" "$out"
  echo "built $name $version in $((SECONDS - start))s" >&2
}

want=${1:-all}
case $want in
  all|helm3) build helm3 "$HELM3_VERSION" helm.sh/helm/v3/cmd/helm ;;&
  all|helm4) build helm4 "$HELM4_VERSION" helm.sh/helm/v4/cmd/helm ;;&
  all|kustomize) build kustomize "$KUSTOMIZE_VERSION" sigs.k8s.io/kustomize/kustomize/v5 ;;&
  all|helm-diff) build_wrapped helm-diff "$HELM_DIFF_VERSION" tools/helm-diff github.com/databus23/helm-diff/v3 ;;&
  all|dyff) build dyff "$DYFF_VERSION" github.com/homeport/dyff/cmd/dyff ;;&
  all|helm3|helm4|kustomize|helm-diff|dyff) ;;
  *) echo "tools.sh: unknown tool $want (want helm3, helm4, kustomize, helm-diff, dyff or nothing for all)" >&2; exit 1 ;;
esac

# Stable names for the versions this script pins, for whichever of them are built.
for link in "helm3:helm3-$HELM3_VERSION" "helm4:helm4-$HELM4_VERSION" "kustomize:kustomize-$KUSTOMIZE_VERSION" "helm-diff:helm-diff-$HELM_DIFF_VERSION" "dyff:dyff-$DYFF_VERSION"; do
  if [ -x "$bin/${link#*:}" ]; then ln -sfn "${link#*:}" "$bin/${link%%:*}"; fi
done
echo "$bin"
