#!/usr/bin/env bash
# make fuzz: each fuzz target for FUZZTIME (a duration, or an execution count such as 10000x).
#
#   scripts/fuzz.sh [build DIR | run DIR]
#
# `go test -fuzz` compiles a package's tests with coverage instrumentation for every package they
# import, standard library included, and links them again for each target. Here each package's
# instrumented test binary is built once (go test -c -fuzz) and every target of the package runs
# from it, with the corpus and cache go test -fuzz would use. `build DIR` only builds the
# binaries into DIR (.ci/run does it at the lowest priority while the tests run), `run DIR` only
# runs them; with neither, both, in a temporary directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
. "$root/scripts/lib/goenv.sh"
cd "$root"
FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}

# package: its targets. The manifest round trip (untouched streams come back byte for byte), the
# identity scanner and YAML decoding against sigs.k8s.io/yaml, second-owner stream checks, the
# drift-detection transform, the diff comparator with its normaliser, the line views' YAML
# printer against sigs.k8s.io/yaml, SOPS-encrypted files of every format decrypted and written back.
targets=(
  "internal/manifest:FuzzRoundTrip FuzzScan FuzzScanCRD FuzzDecodeYAML"
  "internal/owners:FuzzStream"
  "internal/transform:FuzzDriftDetection"
  "internal/compare:FuzzCompareSelf"
  "internal/output:FuzzPrintYAML"
  "internal/sops:FuzzDecryptFile"
)
binary() { echo "$1/$(echo "$2" | tr / -).test"; }

build() {
  local dir=$1 entry
  mkdir -p "$dir"
  for entry in "${targets[@]}"; do
    local pkg=${entry%%:*}
    go test -c -fuzz . -o "$(binary "$dir" "$pkg")" "./$pkg"
  done
}

run() {
  local dir=$1 entry target
  local cache
  cache=$(go env GOCACHE)/fuzz
  for entry in "${targets[@]}"; do
    local pkg=${entry%%:*} test
    test=$(binary "$dir" "$pkg")
    [ -x "$test" ] || { echo "fuzz.sh: $test is not built (scripts/fuzz.sh build $dir)" >&2; exit 1; }
    for target in ${entry#*:}; do
      echo "fuzz $pkg $target ($FUZZTIME)"
      # As go test runs a test binary: in the package's directory (testdata/fuzz/ holds its
      # corpus), with go test -fuzz's cache directory for the package.
      (cd "$pkg" && "$test" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "$FUZZTIME" \
        -test.fuzzminimizetime "$FUZZMINIMIZETIME" -test.fuzzcachedir "$cache/github.com/helm-drift/helm-drift/$pkg")
    done
  done
}

case ${1:-} in
  build) build "$2" ;;
  run) run "$2" ;;
  "")
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    build "$dir"
    run "$dir"
    ;;
  *) echo "usage: scripts/fuzz.sh [build DIR | run DIR]" >&2; exit 2 ;;
esac
