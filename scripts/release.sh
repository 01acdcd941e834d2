#!/bin/sh
# make release: the whole release in one run, in this order: the archives and signed Helm 4
# plugin tarballs (make dist, IMAGE_REPOSITORY stamped so that the binaries default
# --self-hook-image to the image below), the self-management image (make image) tagged
# vVERSION, the plugins pushed to REGISTRY (make push-plugin), and DIST/RELEASE_NOTES.md naming
# every artifact with its checksum or digest and how a user verifies it.
set -eu
: "${VERSION:?}" "${DIST:?}" "${REGISTRY:?REGISTRY=oci://host/path}" "${IMAGE_REPOSITORY:?IMAGE_REPOSITORY=host/path/helm-drift}" "${SIGN_KEY:?}" "${KEYRING:?}"
make="${MAKE:-make}"
$make dist VERSION="$VERSION" DIST="$DIST" IMAGE_REPOSITORY="$IMAGE_REPOSITORY" SIGN_KEY="$SIGN_KEY" KEYRING="$KEYRING" ${PLATFORMS:+PLATFORMS=$PLATFORMS} ${PASSPHRASE_FILE:+PASSPHRASE_FILE=$PASSPHRASE_FILE}
# Only the lines that name what was pushed (a make nested in another prints directory lines).
image=$($make -s --no-print-directory image VERSION="$VERSION" IMAGE_REPOSITORY="$IMAGE_REPOSITORY" ${INSECURE:+INSECURE=1} | grep '@sha256:' | tail -n1)
plugins=$($make -s --no-print-directory push-plugin VERSION="$VERSION" DIST="$DIST" REGISTRY="$REGISTRY" ${PLAIN_HTTP:+PLAIN_HTTP=1} | grep '^oci://.*@sha256:')
[ -n "$image" ] && [ -n "$plugins" ] || { echo "release: the image or the plugins were not pushed" >&2; exit 1; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# helm-drift v$VERSION"
  echo
  echo "Commit $commit."
  echo
  echo "## Install"
  echo
  echo "- Helm 4, from the registry (signed; the hook fetches and verifies the binary for your platform):"
  echo "  \`helm plugin install ${REGISTRY%/}/drift:$VERSION --keyring KEYRING\` and \`helm plugin install ${REGISTRY%/}/drift-render:$VERSION --keyring KEYRING\`"
  echo "- Helm 4, from the release: \`helm plugin install RELEASE_URL/drift-$VERSION.tgz --keyring KEYRING\` (and \`drift-render-$VERSION.tgz\`)"
  echo "- Helm 3: \`helm plugin install RELEASE_URL/helm-drift-v$VERSION-OS-ARCH.tar.gz\`, or from the source repository (the hook builds with Go, else downloads the archive and verifies it against SHA256SUMS)"
  echo
  echo "Verify by hand: \`sha256sum -c SHA256SUMS\`; \`helm plugin verify drift-$VERSION.tgz --keyring KEYRING\`."
  echo "Rebuild from source: check out the tag and run \`make verify-release VERSION=$VERSION DIST=DIR IMAGE_REPOSITORY=$IMAGE_REPOSITORY\`"
  echo "with the release's files in DIR: every file SHA256SUMS lists is rebuilt and compared."
  echo
  echo "## Artifacts"
  echo
  echo "Self-management image (the default \`--self-hook-image\` of these binaries):"
  echo
  echo "    $image"
  echo
  echo "Helm 4 plugins in the registry:"
  echo
  echo "$plugins" | sed 's/^/    /'
  echo
  echo "SHA256SUMS (reproducible to the byte):"
  echo
  sed 's/^/    /' "$DIST/SHA256SUMS"
  echo
  echo "Signatures:"
  echo
  sed 's/^/    /' "$DIST/SIGNATURES.txt"
} > "$DIST/RELEASE_NOTES.md"
echo "release v$VERSION: $DIST/RELEASE_NOTES.md"
