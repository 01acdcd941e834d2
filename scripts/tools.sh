#!/usr/bin/env bash
# Builds the real tools the tests and benchmarks use, from the Go module proxy only, into a cache
# outside the repository (bin/NAME-VERSION-KEY, with a stable link bin/NAME). Reuses what is
# built. Prints the bin directory.
#
#   scripts/tools.sh              what `make test` uses: helm3, helm4 and dyff
#   scripts/tools.sh NAME...      any of helm3 helm4 dyff kustomize helm-diff flate flux-operator (make bench
#                                 adds kustomize, helm-diff and flate, its baselines), or all
#
# helm3 and helm4 are the real CLIs (helm.sh/helm/v3/cmd/helm, helm.sh/helm/v4/cmd/helm), built
# in this repository's own module graph: go.mod names them as tools, so they compile against the
# very client-go, apimachinery and Helm SDK packages the binary and its tests compile, and a cold
# `make test` compiles those once (the Go build cache shares them; scripts/lib/goenv.sh keeps one
# build configuration). That graph differs from each Helm release's own go.mod only in patch
# versions of the k8s.io modules (v0.37.2 here; Helm v4.3.1 pins v0.37.1, v3.22.0 v0.37.0). Their
# version is stamped as Helm's release build stamps it. HELM3_VERSION or HELM4_VERSION set to
# another version builds that release from its own go.mod instead (go install PKG@VERSION).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
. "$root/scripts/lib/goenv.sh"

# The versions this repository's go.mod requires; the tests are written against them.
modversion() { sed -n "s#^[[:space:]]*$1 \(v[^ ]*\).*#\1#p" "$root/go.mod" | head -n1; }
HELM3_MOD=$(modversion helm.sh/helm/v3)
HELM4_MOD=$(modversion helm.sh/helm/v4)
HELM3_VERSION=${HELM3_VERSION:-$HELM3_MOD}
HELM4_VERSION=${HELM4_VERSION:-$HELM4_MOD}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.1}
HELM_DIFF_VERSION=v3.13.2 # pinned by scripts/tools/helm-diff/go.mod
FLATE_VERSION=v0.6.5            # pinned by scripts/tools/flate/go.mod; it needs Go 1.27 (see below)
FLUX_OPERATOR_VERSION=v0.59.0   # pinned by scripts/tools/flux-operator/go.mod; Go 1.27 as flate
DYFF_VERSION=${DYFF_VERSION:-v1.12.0}  # the external diff program of the -o diff tests (HELM_DRIFT_EXTERNAL_DIFF)

cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}
bin=$cache/bin
mkdir -p "$bin"

# key FILE...: a short hash of the files and of the go command's version and build
# configuration, so that a change to any of them builds again.
key() { { cat "$@"; goconfig; } | sha256sum | cut -c1-10; }

# link NAME FILE: the stable name bin/NAME for a keyed build.
link() { ln -sfn "$(basename "$2")" "$bin/$1"; }

# timed NAME OUT CMD...: run the build command CMD writing OUT.tmp, once; then OUT.
# Another tools.sh building the same OUT (make demo, the tests) is waited for, not raced.
timed() {
  local name=$1 out=$2; shift 2
  if [ -x "$out" ]; then return 0; fi
  exec {lock}>"$out.lock"
  flock "$lock"
  if [ ! -x "$out" ]; then
    echo "building $name (cached at $out)..." >&2
    local start=$SECONDS
    "$@" >&2
    mv "$out.tmp" "$out"
    echo "built $name in $((SECONDS - start))s" >&2
  fi
  exec {lock}>&-
}

# build_helm MAJOR VERSION MODVERSION: the helm CLI, from this module's graph when VERSION is the one
# go.mod requires (MODVERSION), else from the release's own go.mod.
build_helm() {
  local major=$1 version=$2 modv=$3 pkg=helm.sh/helm/v$1/cmd/helm
  local stamp="-X helm.sh/helm/v$major/internal/version.version=$version"
  if [ "$version" = "$modv" ]; then
    local out=$bin/helm$major-$version-$(key "$root/go.mod" "$root/go.sum")
    timed "helm$major $version (this module's graph)" "$out" \
      go -C "$root" build -ldflags "$stamp" -o "$out.tmp" "$pkg"
  else
    local out=$bin/helm$major-$version-release-$(goconfig | sha256sum | cut -c1-10)
    timed "helm$major $version (its own go.mod)" "$out" install_tmp "$out" "$pkg@$version" "$stamp"
  fi
  link "helm$major" "$out"
}

# install_tmp OUT PKG@VERSION [LDFLAGS]: go install into OUT.tmp.
install_tmp() {
  local out=$1 pkg=$2 ldflags=${3:-} tmp
  tmp=$(mktemp -d)
  GOBIN=$tmp GOFLAGS="$GOFLAGS -mod=mod" go install -ldflags "$ldflags" "$pkg" || { rm -rf "$tmp"; return 1; }
  mv "$tmp"/* "$out.tmp"   # go install wrote exactly one binary
  rm -rf "$tmp"
}

release() { # NAME VERSION PACKAGE: a tool built from its own go.mod
  local out=$bin/$1-$2-$(goconfig | sha256sum | cut -c1-10)
  timed "$1 $2" "$out" install_tmp "$out" "$3@$2"
  link "$1" "$out"
}

wrapped() { # NAME VERSION DIR PACKAGE: built in the wrapper module DIR, which pins it
  local dir=$root/scripts/$3
  local out=$bin/$1-$2-$(key "$dir/go.mod" "$dir/go.sum")
  timed "$1 $2" "$out" env GONOSUMDB=github.com/databus23 go -C "$dir" build -o "$out.tmp" "$4"
  link "$1" "$out"
}

# flate (make bench's baseline for diff tree) needs Go 1.27: its wrapper module alone is built
# with GOTOOLCHAIN=go1.27.3, which the go command fetches from the module proxy (about 76 MB,
# once per machine); nothing else here needs it.
flate() {
  local dir=$root/scripts/tools/flate
  local out
  out=$bin/flate-$FLATE_VERSION-$(GOTOOLCHAIN=go1.27.3 key "$dir/go.mod" "$dir/go.sum")
  timed "flate $FLATE_VERSION (Go 1.27.3)" "$out" env GOTOOLCHAIN=go1.27.3 go -C "$dir" build -o "$out.tmp" github.com/home-operations/flate/cmd/flate
  link flate "$out"
}

# The Flux Operator's CLI, whose offline ResourceSet build (flux-operator build resourceset) is
# the oracle of internal/resourceset's (go test ./internal/resourceset with
# HELM_DRIFT_FLUX_OPERATOR set to it): Go 1.27 as flate, by hand only (AGPL-3.0, run as a
# separate program, never linked).
flux_operator() {
  local dir=$root/scripts/tools/flux-operator
  local out
  out=$bin/flux-operator-$FLUX_OPERATOR_VERSION-$(GOTOOLCHAIN=go1.27.3 key "$dir/go.mod" "$dir/go.sum")
  timed "flux-operator $FLUX_OPERATOR_VERSION (Go 1.27.3)" "$out" env GOTOOLCHAIN=go1.27.3 go -C "$dir" build -o "$out.tmp" github.com/controlplaneio-fluxcd/flux-operator/cmd/cli
  link flux-operator "$out"
}

want=("$@")
if [ ${#want[@]} -eq 0 ]; then want=(helm3 helm4 dyff); fi
if [ "${want[*]}" = all ]; then want=(helm3 helm4 dyff kustomize helm-diff flate); fi
for name in "${want[@]}"; do
  case $name in
    helm3) build_helm 3 "$HELM3_VERSION" "$HELM3_MOD" ;;
    helm4) build_helm 4 "$HELM4_VERSION" "$HELM4_MOD" ;;
    dyff) release dyff "$DYFF_VERSION" github.com/homeport/dyff/cmd/dyff ;;
    kustomize) release kustomize "$KUSTOMIZE_VERSION" sigs.k8s.io/kustomize/kustomize/v5 ;;
    helm-diff) wrapped helm-diff "$HELM_DIFF_VERSION" tools/helm-diff github.com/databus23/helm-diff/v3 ;;
    flate) flate ;;
    flux-operator) flux_operator ;;
    *) echo "tools.sh: unknown tool $name (want helm3, helm4, dyff, kustomize, helm-diff, flate, flux-operator or all)" >&2; exit 1 ;;
  esac
done
echo "$bin"
