# Sourced by every script here that runs the go command: the one build configuration of the
# binary, the tests, the helm CLIs and the test environment. Static (CGO_ENABLED=0, as the
# release is) and -trimpath: the Go build cache keys a compiled package by its flags, so one
# configuration lets `make test`, the plugin's install hook and the helm CLIs (built in this
# module's dependency graph, see scripts/tools.sh) share every package they have in common. The
# Makefile exports the same two settings.
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}" ;;
esac

# goconfig: the configuration as one line, for the cache keys of the builds.
goconfig() { echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$(printf '%s\n' $GOFLAGS | sort -u | tr '\n' ' ') $(go env GOVERSION GOOS GOARCH | tr '\n' ' ')"; }
