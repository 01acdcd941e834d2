# helm-drift: the targets a developer and CI use. `make test` is the README's test command.
SHELL := /bin/bash
GO ?= go
VERSION := $(shell sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' plugin.yaml | head -n1)
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# IMAGE_REPOSITORY: where the release pushes the self-management Jobs' image; a build stamped
# with it defaults --self-hook-image to IMAGE_REPOSITORY:vVERSION.
IMAGE_REPOSITORY ?=
# One build configuration for everything the go command builds here (the binary, vet, the tests,
# the helm CLIs and the test environment; scripts/lib/goenv.sh says the same for the scripts):
# static, -trimpath and no DWARF in the compiled packages, so that the Go build cache compiles
# each shared package once.
export CGO_ENABLED := 0
ifeq ($(filter -trimpath,$(GOFLAGS)),)
GOFLAGS += -trimpath
endif
ifeq ($(filter -gcflags=%,$(GOFLAGS)),)
GOFLAGS += -gcflags=all=-dwarf=false
endif
export GOFLAGS
LDFLAGS := -X github.com/helm-drift/helm-drift/internal/cli.version=v$(VERSION) -X github.com/helm-drift/helm-drift/internal/cli.commit=$(COMMIT) $(if $(IMAGE_REPOSITORY),-X github.com/helm-drift/helm-drift/internal/cli.imageRepository=$(IMAGE_REPOSITORY))

.PHONY: all build tools test test-unit lint bench fuzz demo screenshots image dist verify-release push-plugin release clean

all: build

## build: bin/helm-drift (BIN=path for another) from this source, nothing else; IMAGE_REPOSITORY=... stamps a release build's default hook image
BIN ?= bin/helm-drift
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/helm-drift

## image: the container image the self-management Jobs run (the static linux/amd64 helm-drift and
## the machine's CA certificates on an empty base; no Docker, nothing downloaded), pushed to
## IMAGE; INSECURE=1 for a plain-HTTP registry. Prints IMAGE@digest.
IMAGE ?= $(if $(IMAGE_REPOSITORY),$(IMAGE_REPOSITORY),127.0.0.1:5000/helm-drift):v$(VERSION)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "$(LDFLAGS) -buildid=" -o bin/linux-amd64/helm-drift ./cmd/helm-drift
	cd scripts/image && $(GO) run . -binary ../../bin/linux-amd64/helm-drift -ref $(IMAGE) $(if $(INSECURE),-insecure)

## dist: the release in dist/ (DIST=dir for another), reproducible to the byte: for each of
## PLATFORMS, a static helm-drift in a Helm plugin archive; the Helm 4 plugin tarballs
## drift-VERSION.tgz and drift-render-VERSION.tgz; SHA256SUMS over them all. VERSION=x.y.z
## (default: plugin.yaml's); every file time is the commit's (SOURCE_DATE_EPOCH). With SIGN_KEY
## (a PGP key name) and KEYRING (its secret keyring; PASSPHRASE_FILE if it has one) the tarballs
## are signed (.prov, whose bytes differ per signing: SIGNATURES.txt says what to verify).
DIST ?= dist
PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
dist:
	$(GO) run ./scripts/dist -version $(VERSION) -commit $(COMMIT) -out $(DIST) -platforms $(PLATFORMS) -epoch $(SOURCE_DATE_EPOCH) $(if $(IMAGE_REPOSITORY),-image-repository $(IMAGE_REPOSITORY)) \
		$(if $(SIGN_KEY),-sign-key "$(SIGN_KEY)" -keyring $(KEYRING) $(if $(PASSPHRASE_FILE),-passphrase-file $(PASSPHRASE_FILE)))

## verify-release: rebuild release VERSION from this checkout (the tag's) and compare each file
## DIST/SHA256SUMS lists (the release's: the files beside it are checked against it too) with
## the rebuild's, for the platforms the release has; IMAGE_REPOSITORY as the release was made.
## Fails naming every file that differs. The signatures are not compared (see SIGNATURES.txt).
verify-release:
	$(GO) run ./scripts/dist -verify $(DIST) -version $(VERSION) -commit $(COMMIT) -epoch $(SOURCE_DATE_EPOCH) $(if $(IMAGE_REPOSITORY),-image-repository $(IMAGE_REPOSITORY))

## push-plugin: push the signed Helm 4 plugin tarballs of DIST to REGISTRY (oci://host/path) as
## Helm plugin artifacts, REGISTRY/drift:VERSION and REGISTRY/drift-render:VERSION; PLAIN_HTTP=1
## for a plain-HTTP registry. Prints each reference with its digest.
push-plugin:
	$(GO) run ./scripts/pushplugin -registry $(REGISTRY) -dir $(DIST) -version $(VERSION) $(if $(PLAIN_HTTP),-plain-http)

## release: dist (IMAGE_REPOSITORY stamped, SIGN_KEY/KEYRING signing), image (IMAGE_REPOSITORY:vVERSION),
## push-plugin (REGISTRY), then DIST/RELEASE_NOTES.md with every checksum and digest (scripts/release.sh).
release:
	VERSION=$(VERSION) DIST=$(DIST) REGISTRY=$(REGISTRY) IMAGE_REPOSITORY=$(IMAGE_REPOSITORY) SIGN_KEY="$(SIGN_KEY)" KEYRING=$(KEYRING) \
		PLATFORMS=$(PLATFORMS) INSECURE=$(INSECURE) PLAIN_HTTP=$(PLAIN_HTTP) PASSPHRASE_FILE=$(PASSPHRASE_FILE) MAKE="$(MAKE)" sh scripts/release.sh

## tools: build what the tests use into ~/.cache/helm-drift (once): the real helm v3 and v4 CLIs, dyff, and the test environment (kube-apiserver with etcd, helm-controller and source-controller, the OCI registry), all at once
tools:
	bash scripts/testenv/build.sh

## lint: gofmt and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...

## test: lint, unit tests, the end-to-end tests against the real helm CLIs, and the chart's alert rules evaluated by Prometheus's own rule engine (scripts/promrules, a module of its own)
## (builds, once and cached: the helm CLIs, dyff and the test environment, scripts/testenv/build.sh, which the e2e tests call)
test: lint
	GO=$(GO) bash scripts/test.sh

## test-unit: the fast tests only (no helm CLIs, no cluster)
test-unit:
	$(GO) test -short -count=1 ./...

# The chart the diff upgrade target was set on (kube-prometheus-stack, not in the corpus) and its
# dependencies, assembled from their Git repositories through the Go module proxy, which serves
# these commits (88.6.1 with grafana 13.0.1). Its admission webhook is off: the test
# environment runs no pods, so the Job that makes the webhook's certificate never runs.
PROMETHEUS_CHARTS := github.com/prometheus-community/helm-charts@v0.0.0-20260828105119-ed5d7d9b5933
GRAFANA_CHARTS := github.com/grafana-community/helm-charts@v0.0.0-20260829030558-dbf9f4fb5fa1
UPGRADE_CHART := $(PROMETHEUS_CHARTS):charts/kube-prometheus-stack $(PROMETHEUS_CHARTS):charts/kube-state-metrics \
	$(PROMETHEUS_CHARTS):charts/prometheus-node-exporter $(PROMETHEUS_CHARTS):charts/prometheus-windows-exporter \
	$(GRAFANA_CHARTS):charts/grafana
UPGRADE_CHART_ARGS := --set prometheusOperator.admissionWebhooks.enabled=false

## bench: render vs a kyaml round trip vs kustomize build; diff vs helm-diff on a 1,000-object release; diff upgrade of the largest corpus chart and of kube-prometheus-stack vs helm-diff; diff helmrelease --all over 50 HelmReleases; diff release -A over a fleet of 200 and 1,000 releases; serve's history over 1,000 releases (writes per run, memory against the serve before it); diff tree over a 200-HelmRelease repository vs helm template; ratios printed
## (builds, besides what make test uses: kustomize and helm-diff, the baselines, and kube-prometheus-stack's chart from its Git repository)
bench:
	bash scripts/tools.sh kustomize helm-diff >/dev/null
	$(GO) test -run '^TestCompare$$' -count=1 -timeout 30m ./bench/ -args -compare
	$(GO) test -v -run '^TestOwnersCompare$$' -count=1 -timeout 30m ./bench/ -args -compare
	$(GO) test -v -run '^TestLineViewCompare$$' -count=1 -timeout 30m ./bench/ -args -compare
	$(GO) test -v -run '^TestConsoleCompare$$' -count=1 -timeout 30m ./bench/ -args -compare
	$(GO) test -v -run '^TestDiffCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare
	$(GO) test -v -run '^TestUpgradeCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare -runs 5
	$(GO) test -v -run '^TestUpgradeCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare -runs 5 \
		-upgrade-chart "$$(bash scripts/modchart.sh $(UPGRADE_CHART))" -upgrade-chart-args "$(UPGRADE_CHART_ARGS)"
	$(GO) test -v -run '^TestHelmReleaseCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare
	$(GO) test -v -run '^TestFleetCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare
	$(GO) test -v -run '^TestServeHistoryCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare
	$(GO) test -v -run '^TestTreeCompare$$' -count=1 -timeout 30m ./bench/diffbench/ -args -compare
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./bench/

## fuzz: each fuzz target for FUZZTIME (default 60s), each package's instrumented test binary built once (scripts/fuzz.sh): manifest round trip, identity scanner, YAML decoding against sigs.k8s.io/yaml, second-owner stream checks, drift detection, diff comparator, the line views' YAML printer, SOPS file decryption
# FUZZTIME is a duration or an execution count (10000x). Go 1.26's fuzz coordinator can fail a
# duration-bounded run with a spurious "context deadline exceeded" as the time runs out
# (golang/go#75804, fixed in Go 1.27): .ci/run uses a count, which has no deadline to race.
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) bash scripts/fuzz.sh

## demo: the main job (scripts/demo.sh): builds bin/helm-drift and the helm CLIs, renders the example charts through the plugins, then builds and starts the test environment (kube-apiserver, Flux controllers, registry; built meanwhile at low priority) and shows Flux correct drift and diff predict an upgrade
demo:
	MAKE="$(MAKE)" bash scripts/demo.sh

## screenshots: the README's pictures of the drift console (docs/images), taken by the browser test
screenshots:
	HELM_DRIFT_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -count=1 -run '^TestConsoleBrowser$$' ./e2e/

clean:
	rm -rf bin
