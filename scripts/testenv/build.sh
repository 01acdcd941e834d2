#!/usr/bin/env bash
# Builds the real parts of the test environment from the Go module proxy only, each from its
# wrapper module here, into a cache outside the repository keyed by version and by a hash of the
# wrapper (go.mod, go.sum, main.go). Reuses what is built. Prints the cache directory, which then
# holds: kube-apiserver, helm-controller, source-controller, registry (symlinks to the keyed
# builds), crds/ (the Flux CRDs from the controllers' modules), and helm3/helm4 via ../tools.sh.
#
# Cold, on 2 cores: kube-apiserver ~4 min, helm-controller ~4 min, source-controller ~5 min,
# registry ~1 min.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
cache=${HELM_DRIFT_CACHE:-$HOME/.cache/helm-drift}/testenv
mkdir -p "$cache"

KUBE_VERSION=v1.34.2
HELM_CONTROLLER_VERSION=v1.6.4
SOURCE_CONTROLLER_VERSION=v1.9.6
REGISTRY_VERSION=v3.0.0

# build NAME VERSION PACKAGE [LDFLAGS]: go build PACKAGE in wrapper module NAME, once per key.
build() {
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  local key
  key=$(cd "$here/$name" && find . -maxdepth 1 -type f \( -name 'go.*' -o -name '*.go' \) | sort | xargs cat | sha256sum | cut -c1-10)
  local out=$cache/$name-$version-$key
  if [ ! -x "$out" ]; then
    echo "building $name $version (cached at $out)..." >&2
    local start=$SECONDS
    (cd "$here/$name" && GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg") >&2
    mv "$out.tmp" "$out"
    echo "built $name in $((SECONDS - start))s" >&2
  fi
  ln -sfn "$(basename "$out")" "$cache/$name"
}

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
build kube-apiserver "$KUBE_VERSION" . \
  "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
build helm-controller "$HELM_CONTROLLER_VERSION" github.com/fluxcd/helm-controller
build source-controller "$SOURCE_CONTROLLER_VERSION" github.com/fluxcd/source-controller
build registry "$REGISTRY_VERSION" github.com/distribution/distribution/v3/cmd/registry
build ctl dev .   # testenv-ctl: up / down / logs (standard library only)

# The Flux CRDs, from the very module versions the controllers were built from.
crds=$cache/crds-$HELM_CONTROLLER_VERSION-$SOURCE_CONTROLLER_VERSION
if [ ! -d "$crds" ]; then
  mkdir -p "$crds.tmp"
  for m in "helm-controller github.com/fluxcd/helm-controller@$HELM_CONTROLLER_VERSION" "source-controller github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION"; do
    dir=$(cd "$here/${m%% *}" && go mod download -json "${m#* }" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    cp "$dir"/config/crd/bases/*.yaml "$crds.tmp/"
  done
  chmod -R u+w "$crds.tmp"
  mv "$crds.tmp" "$crds"
fi
ln -sfn "$(basename "$crds")" "$cache/crds"

# The helm CLIs the tests install with.
bash "$here/../tools.sh" >/dev/null
echo "$cache"
