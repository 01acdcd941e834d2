#!/usr/bin/env bash
# make test, after lint: every test of this module, and scripts/promrules' (a module of its own,
# so that Prometheus' dependencies stay out of go.mod) beside them at the lowest priority: its
# cold compile takes the cycles the end-to-end tests leave idle while they wait on the
# controllers, instead of adding its minute after them. Both must pass.
#
# Parallel tests run up to TEST_PARALLEL (default 4) at a time, the end-to-end ones among them: most of their time is
# spent waiting on the API server, helm-controller and the registry, or linking on one core.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
. "$root/scripts/lib/goenv.sh"
go=${GO:-go}
log=$(mktemp)
# The reports of one release the end-to-end tests print, for the exit-code check after them.
reports=$(mktemp -d)
trap 'rm -rf "$log" "$reports"' EXIT
(cd "$root/scripts/promrules" && nice -n 19 "$go" test -count=1 ./...) >"$log" 2>&1 &
promrules=$!
# GOTESTFLAGS: more go test flags (-json for test-by-test timings, -v, -run ...).
# shellcheck disable=SC2086
(cd "$root" && HELM_DRIFT_E2E_REPORTS=$reports "$go" test -count=1 -timeout 30m -parallel "${TEST_PARALLEL:-4}" ${GOTESTFLAGS:-} ./...)
rc=$?
# One exit-code policy: each of those reports exits the same judged alone and as a row of
# --all (internal/cli TestExitCodeE2EReports; not run when the run above ran no e2e test).
if [ "$rc" -eq 0 ] && ls "$reports"/report-* >/dev/null 2>&1; then
  (cd "$root" && HELM_DRIFT_E2E_REPORTS_RECORDED=$reports "$go" test -count=1 -v -run '^TestExitCodeE2EReports$' ./internal/cli | grep -v '^=== RUN')
  rc=$?
fi
wait "$promrules"
prc=$?
echo "scripts/promrules:"
cat "$log"
[ "$rc" -eq 0 ] && [ "$prc" -eq 0 ]
