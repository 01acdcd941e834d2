# Sourced by every script here that runs the go command: the one build configuration of the
# binary, the tests, the helm CLIs and the test environment. Static (CGO_ENABLED=0, as the
# release is), -trimpath, and no DWARF debug information in the compiled packages
# (-gcflags=all=-dwarf=false: 13% less compile time, measured on client-go; stack traces and
# profiles read the symbol table, not DWARF; set GOFLAGS with a -gcflags of your own, e.g.
# -gcflags=all=-N, to debug): the Go build cache keys a compiled package by its flags, so one
# configuration lets `make test`, the plugin's install hook and the helm CLIs (built in this
# module's dependency graph, see scripts/tools.sh) share every package they have in common. The
# Makefile exports the same settings.
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}" ;;
esac
case " $GOFLAGS " in
  *" -gcflags="*) ;;
  *) export GOFLAGS="$GOFLAGS -gcflags=all=-dwarf=false" ;;
esac

# goconfig: the configuration as one line, for the cache keys of the builds.
goconfig() { echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$(printf '%s\n' $GOFLAGS | sort -u | tr '\n' ' ') $(go env GOVERSION GOOS GOARCH | tr '\n' ' ')"; }
