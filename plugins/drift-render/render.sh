#!/bin/sh
# Runs `helm-drift render` with Helm 4's post-renderer arguments. The binary is this plugin's
# own (bin/helm-drift here: a release tarball's install hook puts it there), else the one the
# repository builds (bin/helm-drift two levels up, the drift CLI plugin's), else the drift
# plugin's beside this one, else helm-drift on PATH. With --build (the install hook), it is
# built or downloaded first if missing (scripts/install.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." 2>/dev/null && pwd -P || echo "$here")
if [ "${1:-}" = "--build" ]; then
  shift
  if [ -f "$here/scripts/install.sh" ]; then
    exec "$here/scripts/install.sh" "$@"
  fi
  exec "$root/scripts/install.sh" "$@"
fi
for bin in "$here/bin/helm-drift" "$root/bin/helm-drift" "$(dirname "$here")/drift/bin/helm-drift" "$(command -v helm-drift 2>/dev/null || true)"; do
  if [ -n "$bin" ] && [ -x "$bin" ]; then
    # Helm 4 (v4.3.1, internal/plugin/runtime_subprocess.go runPostrenderer) collects a
    # post-renderer plugin's stderr in a buffer and drops it, printing only "plugin exited with
    # error". Write messages to Helm's own stderr instead, so the user sees which document and
    # rule failed. Where that is not possible, our stderr stays as Helm gave it.
    # Not for a regular file: Helm writes it at its own offset and would overwrite our lines.
    if [ -z "${HELM_DRIFT_PLAIN_STDERR:-}" ] && [ ! -f "/proc/$PPID/fd/2" ] && (: 2>>"/proc/$PPID/fd/2") 2>/dev/null; then
      exec "$bin" render "$@" 2>>"/proc/$PPID/fd/2"
    fi
    exec "$bin" render "$@"
  fi
done
echo "drift-render: no helm-drift binary at $root/bin/helm-drift nor on PATH; build it with $root/scripts/install.sh (needs Go)" >&2
exit 1
