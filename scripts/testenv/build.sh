#!/usr/bin/env bash
#   scripts/testenv/build.sh            the test environment, and the helm CLIs (scripts/tools.sh) first
#   scripts/testenv/build.sh testenv    the test environment only: the caller builds the helm CLIs
#                                       (make demo, in the foreground), parts/ compiles beside them
#
# Builds the real parts of the test environment from the Go module proxy only, each from its
# wrapper module here, into a cache outside the repository keyed by version and by a hash of the
# wrapper (go.mod, go.sum, its Go files), the go command's version and the build configuration.
# Reuses what is built. Prints the cache directory, which then holds: kube-apiserver,
# helm-controller, source-controller, kustomize-controller, notification-controller, registry, ctl (links to the keyed
# builds), crds/ (the Flux CRDs from the controllers' modules), and the helm CLIs via ../tools.sh
# (in ../bin).
#
# On 2 cores the builds are CPU-bound, so what matters is how much is compiled, not how much at
# once (docs/development.md has the measured times):
# - the standard library compiles first, once: go commands running at once do not share what
#   they compile, and each would compile it again;
# - then two lines of builds side by side, each in the background with its log in
#   logs/build-NAME.log: the helm CLIs (this repository's module graph, k8s.io v0.37) and then
#   parts/ (the four Flux controllers and the OCI registry, one module raised to those very
#   versions, so that what it shares with the helm CLIs comes from the build cache); and
#   kube-apiserver (k8s.io v0.34, sharing nothing), then ctl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../lib/goenv.sh"
cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}/testenv
mkdir -p "$cache/logs"

KUBE_VERSION=v1.34.2            # older than the binary's v1.37 on purpose: offline defaulting across minor versions
HELM_CONTROLLER_VERSION=v1.6.4  # all four pinned by parts/go.mod
SOURCE_CONTROLLER_VERSION=v1.9.6
KUSTOMIZE_CONTROLLER_VERSION=v1.9.6
NOTIFICATION_CONTROLLER_VERSION=v1.9.3
REGISTRY_VERSION=v3.1.1         # pinned by parts/go.mod too

# key DIR: a short hash of wrapper module DIR, the go command's version and the configuration.
key() {
  { (cd "$1" && find . -type f \( -name 'go.*' -o -name '*.go' \) | sort | xargs cat); goconfig; } | sha256sum | cut -c1-10
}

# build NAME OUT LOG CMD...: run CMD (which writes OUT.tmp) unless OUT exists, then OUT.
# Another build.sh building the same OUT (make demo's, the tests') is waited for, not raced.
build() {
  local name=$1 out=$2 log=$3; shift 3
  [ -e "$out" ] && return 0
  exec {lock}>"$out.lock"
  flock "$lock"
  [ -e "$out" ] && return 0
  local start=$SECONDS
  echo "building $name (cached at $out, log $log)..." >&2
  if ! "$@" >"$log" 2>&1; then
    echo "building $name failed:" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
  mv "$out.tmp" "$out"
  echo "built $name in $((SECONDS - start))s" >&2
}

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
kas=$cache/kube-apiserver-$KUBE_VERSION-$(key "$here/kube-apiserver")
parts=$cache/parts-$HELM_CONTROLLER_VERSION-$SOURCE_CONTROLLER_VERSION-$KUSTOMIZE_CONTROLLER_VERSION-$NOTIFICATION_CONTROLLER_VERSION-$REGISTRY_VERSION-$(key "$here/parts")
ctl=$cache/ctl-$(key "$here/ctl")

if [ ! -e "$kas" ] || [ ! -e "$parts" ] || [ ! -e "$ctl" ]; then
  start=$SECONDS
  go build std
  echo "standard library compiled in $((SECONDS - start))s" >&2
fi

# The helm CLIs, then parts/: one go build for the four controllers and the registry (the
# registry is distribution's with the inmemory driver only, parts/registry/main.go); the output
# is a directory holding the five.
helm_then_parts() {
  if [ "${1:-}" != testenv ]; then bash "$here/../tools.sh" >/dev/null || return 1; fi
  build parts "$parts" "$cache/logs/build-parts.log" \
    bash -c 'mkdir -p "$0.tmp" && go -C "$1/parts" build -ldflags "-s -w" -o "$0.tmp/" github.com/fluxcd/helm-controller github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller github.com/fluxcd/notification-controller ./registry' "$parts" "$here"
}
# kube-apiserver, then ctl (testenv-ctl: up / down / logs; standard library only).
kas_then_ctl() {
  build kube-apiserver "$kas" "$cache/logs/build-kube-apiserver.log" \
    go -C "$here/kube-apiserver" build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" -o "$kas.tmp" . || return 1
  build ctl "$ctl" "$cache/logs/build-ctl.log" go -C "$here/ctl" build -o "$ctl.tmp" .
}

helm_then_parts "${1:-}" & a=$!
kas_then_ctl & b=$!
failed=()
wait $a || failed+=("the helm CLIs or parts/ (the Flux controllers and the registry)")
wait $b || failed+=("kube-apiserver or ctl")
if [ ${#failed[@]} -gt 0 ]; then
  echo "build.sh: could not build: ${failed[*]}" >&2
  exit 1
fi
ln -sfn "$(basename "$kas")" "$cache/kube-apiserver"
for b in helm-controller source-controller kustomize-controller notification-controller registry; do
  ln -sfn "$(basename "$parts")/$b" "$cache/$b"
done
ln -sfn "$(basename "$ctl")" "$cache/ctl"

# The Flux CRDs, from the very module versions the controllers were built from.
crds=$cache/crds-$HELM_CONTROLLER_VERSION-$SOURCE_CONTROLLER_VERSION-$KUSTOMIZE_CONTROLLER_VERSION-$NOTIFICATION_CONTROLLER_VERSION
if [ ! -d "$crds" ]; then
  rm -rf "$crds.tmp"
  mkdir -p "$crds.tmp"
  for m in "github.com/fluxcd/helm-controller@$HELM_CONTROLLER_VERSION" "github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION" \
    "github.com/fluxcd/kustomize-controller@$KUSTOMIZE_CONTROLLER_VERSION" "github.com/fluxcd/notification-controller@$NOTIFICATION_CONTROLLER_VERSION"; do
    dir=$(go -C "$here/parts" mod download -json "$m" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    cp "$dir"/config/crd/bases/*.yaml "$crds.tmp/"
  done
  chmod -R u+w "$crds.tmp"
  mv "$crds.tmp" "$crds"
fi
ln -sfn "$(basename "$crds")" "$cache/crds"
echo "$cache"
