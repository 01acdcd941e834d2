#!/usr/bin/env bash
# The main job, on the bundled charts:
#   1. render: install helm-drift as a Helm 3 and a Helm 4 plugin into scratch Helm homes and
#      render testdata/charts/platform through the post-renderer; show what it changed.
#   2. cluster: start the local test environment (real kube-apiserver, Flux source-controller and
#      helm-controller, OCI registry; scripts/testenv/up), install testdata/charts/umbrella with
#      the Helm 3 CLI and the post-renderer, let helm-controller install the component, delete one
#      of its objects, request a reconcile, and show drift detection bring it back. Stops
#      everything it started at the end.
# Needs Go, curl and jq; the binary, helm and the cluster are built from the Go module proxy
# (cached): part 1 shows once the binary and the helm CLIs are built, the test environment's
# build goes on meanwhile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$root"
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done
scratch=$(mktemp -d)
builder=
cleanup() {
  [ -n "$builder" ] && kill -- -"$builder" 2>/dev/null || true  # the build and its go commands
  [ -f "$scratch/env/pids" ] && scripts/testenv/down "$scratch/env" || true
  rm -rf "$scratch"
}
trap cleanup EXIT
# Part 1 needs only the binary and the helm CLIs; parts 2 and 3 the test environment. Its build
# starts now at the lowest priority, so that it takes only the cores part 1 leaves idle, and
# finishes at full speed while part 1 is read; scripts/testenv/up waits for it.
setsid nice -n 19 bash scripts/testenv/build.sh testenv >"$scratch/testenv-build.log" 2>&1 &
builder=$!
. scripts/lib/goenv.sh
${MAKE:-make} --no-print-directory build >&2
bin=$(bash scripts/tools.sh helm3 helm4)
chart=testdata/charts/platform
rules=(--drift-detection=apps/podinfo=enabled --drift-detection=label:tier=db=warn --namespace=platform --verbose)

echo "### 1. render: the post-renderer under Helm 3 and Helm 4"
echo
for v in 3 4; do
  export HELM_CONFIG_HOME=$scratch/h$v/config HELM_CACHE_HOME=$scratch/h$v/cache HELM_DATA_HOME=$scratch/h$v/data
  unset HELM_PLUGINS
  helm="$bin/helm$v"
  echo "== Helm $v: $("$helm" version --short)"
  echo "\$ helm plugin install $root"
  "$helm" plugin install "$root" | sed 's/^/  /'
  args=()
  for r in "${rules[@]}"; do args+=("--post-renderer-args=$r"); done
  if [ "$v" = 3 ]; then
    echo "\$ helm template rel $chart -n platform --post-renderer $root/bin/helm-drift --post-renderer-args=render ${args[*]}"
    "$helm" template rel "$chart" -n platform > "$scratch/plain.yaml"
    "$helm" template rel "$chart" -n platform --post-renderer "$root/bin/helm-drift" --post-renderer-args=render "${args[@]}" > "$scratch/rendered.yaml"
    echo "-- what the post-renderer changed (diff against helm template without it):"
  else
    "$helm" plugin install "$root/plugins/drift-render" | sed 's/^/  /'
    # Helm 4 re-serialises every document a post-renderer hands back (kyaml), so the baseline
    # is the same render through an identity post-renderer plugin.
    mkdir -p "$scratch/identity"
    printf 'apiVersion: v1\ntype: postrenderer/v1\nname: identity\nversion: 0.0.1\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: cat\n' > "$scratch/identity/plugin.yaml"
    "$helm" plugin install "$scratch/identity" >/dev/null
    echo "\$ helm template rel $chart -n platform --post-renderer drift-render ${args[*]}"
    "$helm" template rel "$chart" -n platform --post-renderer identity > "$scratch/plain.yaml"
    "$helm" template rel "$chart" -n platform --post-renderer drift-render "${args[@]}" > "$scratch/rendered.yaml"
    echo "-- what the post-renderer changed (diff against the same render through an identity post-renderer):"
  fi
  diff -u "$scratch/plain.yaml" "$scratch/rendered.yaml" | sed -n '/^@@/,$p' | grep -E '^[-+@]' | grep -v '^+$' | head -40 || true
  echo
done

echo "### 2. cluster: drift detection, switched on by the post-renderer, at work in Flux"
echo
export HELM_CONFIG_HOME=$scratch/h3/config HELM_CACHE_HOME=$scratch/h3/cache HELM_DATA_HOME=$scratch/h3/data
helm="$bin/helm3"
echo "\$ scripts/testenv/up"
wait "$builder" || { cat "$scratch/testenv-build.log" >&2; exit 1; }
builder=
scripts/testenv/up "$scratch/env" | sed 's/^/  /'
set -a; . "$scratch/env/env"; set +a
api() { curl -sSk -H "Authorization: Bearer $TESTENV_TOKEN" "$@"; }
ns=demo
api -X POST -H 'Content-Type: application/json' "$TESTENV_SERVER/api/v1/namespaces" -d "{\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
"$helm" package testdata/charts/component -d "$scratch" >/dev/null
echo "\$ helm push component-1.0.0.tgz oci://$TESTENV_REGISTRY/charts --plain-http"
"$helm" push "$scratch/component-1.0.0.tgz" "oci://$TESTENV_REGISTRY/charts" --plain-http 2>&1 | sed 's/^/  /'
echo "\$ helm install umbrella testdata/charts/umbrella -n $ns --set registry=$TESTENV_REGISTRY --post-renderer $root/bin/helm-drift --post-renderer-args=render --post-renderer-args=--drift-detection=$ns/component=enabled --post-renderer-args=-n=$ns"
"$helm" install umbrella testdata/charts/umbrella -n "$ns" --set "registry=$TESTENV_REGISTRY" \
  --post-renderer "$root/bin/helm-drift" --post-renderer-args=render \
  --post-renderer-args="--drift-detection=$ns/component=enabled" --post-renderer-args="-n=$ns" | sed 's/^/  /'
hr="$TESTENV_SERVER/apis/helm.toolkit.fluxcd.io/v2/namespaces/$ns/helmreleases/component"
cm="$TESTENV_SERVER/api/v1/namespaces/$ns/configmaps/component-settings"
echo "-- the HelmRelease in the cluster:"
api "$hr" | jq -c '{name: .metadata.name, driftDetection: .spec.driftDetection}' | sed 's/^/  /'

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local t=$1 what=$2; shift 2
  for _ in $(seq $((t * 2))); do "$@" && return 0; sleep 0.5; done
  echo "demo: $what: not within ${t}s" >&2; exit 1
}
ready() { [ "$(api "$hr" | jq -r '.status.conditions[]? | select(.type=="Ready") | .status')" = True ]; }
wait_for 180 "helm-controller installs the component" ready
uid=$(api "$cm" | jq -r .metadata.uid)
rev=$(api "$hr" | jq -r '.status.history[0].version')
echo "-- helm-controller installed the component: ConfigMap component-settings uid $uid, Helm revision $rev"
echo "\$ delete ConfigMap $ns/component-settings, then annotate the HelmRelease reconcile.fluxcd.io/requestedAt"
api -X DELETE "$cm" >/dev/null
token=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
api -X PATCH -H 'Content-Type: application/merge-patch+json' "$hr" -d "{\"metadata\":{\"annotations\":{\"reconcile.fluxcd.io/requestedAt\":\"$token\"}}}" >/dev/null
back() {
  local now
  now=$(api "$cm" | jq -r .metadata.uid)
  [ "$now" != "$uid" ] && [ "$now" != null ] &&
    [ "$(api "$hr" | jq -r --arg t "$token" 'select(.status.lastHandledReconcileAt == $t) | .status.conditions[] | select(.type=="Drifted") | .status')" = False ]
}
wait_for 120 "helm-controller corrects the drift" back
echo "-- it is back: uid $(api "$cm" | jq -r .metadata.uid), Helm revision $(api "$hr" | jq -r '.status.history[0].version')"
api "$hr" | jq -r '.status.conditions[] | "  \(.type)=\(.status) (\(.reason)): \(.message | split("\n")[0])"'
echo "-- helm-controller's log:"
grep -h 'detected changes in cluster state' "$TESTENV_LOGS/helm-controller.log" | jq -r '"  \(.msg)"' | head -1 || true

echo
echo "### 3. diff: what a helm upgrade would and would not fix"
echo
ns=shop
api -X POST -H 'Content-Type: application/json' "$TESTENV_SERVER/api/v1/namespaces" -d "{\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
echo "\$ helm install web testdata/charts/webapp -n $ns"
"$helm" install web testdata/charts/webapp -n "$ns" >/dev/null
drift() { "$root/bin/helm-drift" "$@" --kubeconfig "$KUBECONFIG"; }
echo "\$ helm drift diff release web -n $ns"
drift diff release web -n "$ns" | sed 's/^/  /' || true
deploy="$TESTENV_SERVER/apis/apps/v1/namespaces/$ns/deployments/web"
echo "\$ by hand: replicas 3; an env entry applied by a sidecar injector (server-side apply); ConfigMap web-settings deleted"
api -X PATCH -H 'Content-Type: application/merge-patch+json' "$deploy?fieldManager=kubectl-patch" -d '{"spec":{"replicas":3}}' >/dev/null
api -X PATCH -H 'Content-Type: application/apply-patch+yaml' "$deploy?fieldManager=sidecar-injector" \
  -d '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","env":[{"name":"TRACING","value":"on"}]}]}}}}' >/dev/null
api -X DELETE "$TESTENV_SERVER/api/v1/namespaces/$ns/configmaps/web-settings" >/dev/null
echo "\$ helm drift diff upgrade web testdata/charts/webapp -n $ns --set image=nginx:1.28"
drift diff upgrade web testdata/charts/webapp -n "$ns" --set image=nginx:1.28 | sed 's/^/  /' || true
echo "\$ helm upgrade web testdata/charts/webapp -n $ns --set image=nginx:1.28"
"$helm" upgrade web testdata/charts/webapp -n "$ns" --set image=nginx:1.28 >/dev/null
echo "\$ helm drift diff release web -n $ns     # what the upgrade left: exactly the rows predicted \"no\""
drift diff release web -n "$ns" | sed 's/^/  /' || true
