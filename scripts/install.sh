#!/bin/sh
# Builds bin/helm-drift from this source with `go build`: the install and update hook of the Helm
# plugins. Never downloads a binary. Reuses a binary that is already built unless --rebuild.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd -P)
out="$root/bin/helm-drift"
if [ "${1:-}" != "--rebuild" ] && [ -x "$out" ]; then
  echo "helm-drift: using the binary already built at $out"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "helm-drift: Go is not installed (no 'go' on PATH). The plugin builds from source and downloads nothing:" >&2
  echo "  install Go 1.26 or newer, then run: helm plugin update drift   (or $root/scripts/install.sh)" >&2
  exit 1
fi
echo "helm-drift: building $out with $(go version | cut -d' ' -f3)..."
version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/plugin.yaml" | head -n1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
cd "$root"
CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/helm-drift/helm-drift/internal/cli.version=v$version -X github.com/helm-drift/helm-drift/internal/cli.commit=$commit" -o "$out.tmp" ./cmd/helm-drift
mv "$out.tmp" "$out"
echo "helm-drift: installed $out"
