#!/bin/sh
# The install and update hook of the Helm plugins. In order:
#   1. a helm-drift binary already in bin/ (a release archive ships one): use it;
#   2. Go on PATH and the source here (a clone, not a plugin tarball): build bin/helm-drift;
#   3. else download the release archive for this OS and architecture from HELM_DRIFT_RELEASE_URL
#      (default: the project's releases for this version), verify it against the release's
#      SHA256SUMS, and install its binary. A checksum that does not match installs nothing.
# bin/.installed records how the binary came (helm drift version prints it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd -P)
out="$root/bin/helm-drift"
version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/plugin.yaml" | head -n1)
if [ "${1:-}" != "--rebuild" ] && [ -x "$out" ]; then
  echo "helm-drift: using the binary already at $out"
  [ -f "$root/bin/.installed" ] || echo "binary found in the plugin directory" > "$root/bin/.installed"
  exit 0
fi
mkdir -p "$root/bin"
if command -v go >/dev/null 2>&1 && [ -f "$root/go.mod" ]; then
  echo "helm-drift: building $out with $(go version | cut -d' ' -f3)..."
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  cd "$root"
  CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/helm-drift/helm-drift/internal/cli.version=v$version -X github.com/helm-drift/helm-drift/internal/cli.commit=$commit" -o "$out.tmp" ./cmd/helm-drift
  mv "$out.tmp" "$out"
  echo "built from source with $(go version | cut -d' ' -f3)" > "$root/bin/.installed"
  echo "helm-drift: installed $out"
  exit 0
fi

# 3. The release archive, verified.
fail() {
  echo "helm-drift: $*" >&2
  echo "  nothing was installed (helm may still list the plugin: helm plugin uninstall drift)." >&2
  echo "  Install Go 1.26 or newer and install again, or install a release archive: helm plugin install $base/$archive" >&2
  exit 1
}
os=$(uname -s | tr 'A-Z' 'a-z')
case "$os" in linux|darwin) ;; mingw*|msys*|cygwin*) os=windows ;; *) os="" ;; esac
arch=$(uname -m)
case "$arch" in x86_64|amd64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) arch="" ;; esac
base=${HELM_DRIFT_RELEASE_URL:-https://github.com/helm-drift/helm-drift/releases/download/v$version}
base=${base%/}
archive="helm-drift-v$version-$os-$arch.tar.gz"
[ -n "$os" ] && [ -n "$arch" ] || fail "no Go on PATH, and no release archive for $(uname -s)/$(uname -m) (linux and darwin on amd64 and arm64, windows on amd64)"
if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL --retry 2 -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  fail "no Go on PATH, and neither curl nor wget to download $base/$archive"
fi
if command -v sha256sum >/dev/null 2>&1; then
  sum() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sum() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  fail "no sha256sum or shasum to verify $archive with"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "helm-drift: no Go on PATH (or no source here): downloading $base/$archive"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "could not download $base/SHA256SUMS (set HELM_DRIFT_RELEASE_URL to where the release is)"
fetch "$base/$archive" "$tmp/$archive" || fail "could not download $base/$archive"
want=$(awk -v f="$archive" '$2 == f { print $1 }' "$tmp/SHA256SUMS")
[ -n "$want" ] || fail "$base/SHA256SUMS lists no $archive"
got=$(sum "$tmp/$archive")
[ "$got" = "$want" ] || fail "checksum mismatch for $archive: $got, SHA256SUMS says $want"
mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" bin || fail "$archive holds no bin/"
bin=$(ls "$tmp/x/bin/" | head -n1)
[ -n "$bin" ] || fail "$archive holds no binary"
mv "$tmp/x/bin/$bin" "$out.tmp"
chmod 0755 "$out.tmp"
mv "$out.tmp" "$out"
echo "release archive $archive, sha256 $got, verified against $base/SHA256SUMS" > "$root/bin/.installed"
echo "helm-drift: installed $out from $archive (sha256 verified)"
