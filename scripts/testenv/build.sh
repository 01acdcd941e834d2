#!/usr/bin/env bash
#   scripts/testenv/build.sh            the test environment and the helm CLIs (scripts/tools.sh)
#   scripts/testenv/build.sh testenv    the test environment only
#
# Builds the real parts of the test environment from the Go module proxy only, each from its
# wrapper module here, into a cache outside the repository keyed by version and by a hash of the
# wrapper (go.mod, go.sum, main.go), the go command's version and the build configuration.
# Reuses what is built. Prints the cache directory, which then holds: kube-apiserver,
# helm-controller, source-controller, notification-controller, registry, ctl (links to the keyed
# builds), crds/ (the Flux CRDs from the controllers' modules), and the helm CLIs via ../tools.sh
# (in ../bin).
#
# The builds are independent and run at once, each in the background with its log in
# logs/build-NAME.log: `go build` compiles on every core but links on one, and the groups share
# nothing (kube-apiserver's k8s.io modules are v0.34, the controllers' v0.36, the helm CLIs' this
# repository's v0.37). The three Flux controllers are one module (flux/), so the packages they
# share compile once. Cold, on 2 cores: see docs/development.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../lib/goenv.sh"
cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}/testenv
mkdir -p "$cache/logs"

KUBE_VERSION=v1.34.2            # older than the binary's v1.37 on purpose: offline defaulting across minor versions
HELM_CONTROLLER_VERSION=v1.6.4  # all three pinned by flux/go.mod
SOURCE_CONTROLLER_VERSION=v1.9.6
NOTIFICATION_CONTROLLER_VERSION=v1.9.3
REGISTRY_VERSION=v3.0.0         # pinned by registry/go.mod

# key DIR: a short hash of wrapper module DIR, the go command's version and the configuration.
key() {
  { (cd "$1" && find . -maxdepth 1 -type f \( -name 'go.*' -o -name '*.go' \) | sort | xargs cat); goconfig; } | sha256sum | cut -c1-10
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
flux=$cache/flux-$HELM_CONTROLLER_VERSION-$SOURCE_CONTROLLER_VERSION-$NOTIFICATION_CONTROLLER_VERSION-$(key "$here/flux")
reg=$cache/registry-$REGISTRY_VERSION-$(key "$here/registry")
ctl=$cache/ctl-$(key "$here/ctl")

pids=() names=()
bg() { local name=$1; shift; "$@" & pids+=($!); names+=("$name"); }  # bg NAME CMD...
bg kube-apiserver build kube-apiserver "$kas" "$cache/logs/build-kube-apiserver.log" \
  go -C "$here/kube-apiserver" build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" -o "$kas.tmp" .
# One go build for the three controllers: the output is a directory holding helm-controller,
# source-controller and notification-controller.
bg flux build flux-controllers "$flux" "$cache/logs/build-flux.log" \
  bash -c 'mkdir -p "$0.tmp" && go -C "$1/flux" build -ldflags "-s -w" -o "$0.tmp/" github.com/fluxcd/helm-controller github.com/fluxcd/source-controller github.com/fluxcd/notification-controller' "$flux" "$here"
bg registry build registry "$reg" "$cache/logs/build-registry.log" \
  go -C "$here/registry" build -ldflags "-s -w" -o "$reg.tmp" .  # distribution's registry with the inmemory driver only (registry/main.go)
bg ctl build ctl "$ctl" "$cache/logs/build-ctl.log" go -C "$here/ctl" build -o "$ctl.tmp" .  # testenv-ctl: up / down / logs (standard library only)
# The helm CLIs the tests install with (tools.sh prints its own progress), unless the only
# argument is "testenv" (make demo builds them first, in the foreground).
if [ "${1:-}" != testenv ]; then
  bg "helm CLIs" bash "$here/../tools.sh" >/dev/null
fi
failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "build.sh: could not build: ${failed[*]}" >&2
  exit 1
fi
ln -sfn "$(basename "$kas")" "$cache/kube-apiserver"
ln -sfn "$(basename "$flux")/helm-controller" "$cache/helm-controller"
ln -sfn "$(basename "$flux")/source-controller" "$cache/source-controller"
ln -sfn "$(basename "$flux")/notification-controller" "$cache/notification-controller"
ln -sfn "$(basename "$reg")" "$cache/registry"
ln -sfn "$(basename "$ctl")" "$cache/ctl"

# The Flux CRDs, from the very module versions the controllers were built from.
crds=$cache/crds-$HELM_CONTROLLER_VERSION-$SOURCE_CONTROLLER_VERSION-$NOTIFICATION_CONTROLLER_VERSION
if [ ! -d "$crds" ]; then
  rm -rf "$crds.tmp"
  mkdir -p "$crds.tmp"
  for m in "github.com/fluxcd/helm-controller@$HELM_CONTROLLER_VERSION" "github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION" \
    "github.com/fluxcd/notification-controller@$NOTIFICATION_CONTROLLER_VERSION"; do
    dir=$(go -C "$here/flux" mod download -json "$m" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    cp "$dir"/config/crd/bases/*.yaml "$crds.tmp/"
  done
  chmod -R u+w "$crds.tmp"
  mv "$crds.tmp" "$crds"
fi
ln -sfn "$(basename "$crds")" "$cache/crds"
echo "$cache"
