# Bloodraven build entry points. `make test` is the README's test command;
# it builds the control plane it needs first.
SHELL := /bin/bash
GO ?= go
BIN_DIR ?= $(CURDIR)/bin
export BIN_DIR
# Integration packages each start their own kube-apiserver; keep the whole
# run bounded so a hung test fails instead of stalling CI.
TEST_TIMEOUT ?= 20m

.PHONY: all build tools test unit soak mutation-check generate verify fmt vet playground playground-up playground-down e2e clean

all: build

## build: compile every binary under cmd/ into bin/
build:
	@mkdir -p $(BIN_DIR)
	@if $(GO) list ./cmd/... >/dev/null 2>&1; then $(GO) build -o $(BIN_DIR)/ ./cmd/...; else echo "no binaries under cmd/ yet"; fi

## tools: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from Go modules, and install the test packages from apt
tools:
	@bash scripts/build-controlplane.sh
	@bash scripts/install-test-packages.sh

## test: unit and integration tests (integration tests run a real etcd + kube-apiserver)
test: tools
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

## unit: only the tests that need no control plane (fast feedback while editing)
unit:
	$(GO) test -count=1 -short ./...

## soak: both invariant harnesses, longer than CI runs them and on fresh seeds (SOAK_SEED_BASE, default from the clock; docs/testing.md); logs in bin/soak
SOAK_SEQUENCES ?= 100000
SOAK_REAL_SEQUENCES ?= 300
SOAK_SEED_BASE ?= clock
soak: tools
	@mkdir -p $(BIN_DIR)/soak
	set -o pipefail; HARNESS_SEED_BASE=$(SOAK_SEED_BASE) HARNESS_SEQUENCES=$(SOAK_SEQUENCES) $(GO) test -count=1 -timeout 3h -run '^TestInvariantHarness$$' -v ./pkg/topology/ | tee $(BIN_DIR)/soak/decision.log | grep -E '^(---|ok|FAIL)|harness_(test|soak_test).go'
	set -o pipefail; HARNESS_REAL_SEED_BASE=$(SOAK_SEED_BASE) HARNESS_REAL_SEQUENCES=$(SOAK_REAL_SEQUENCES) $(GO) test -count=1 -timeout 3h -run '^TestRealInvariantHarness$$' -v ./pkg/controllers/topologymanager/managerintegration/ | tee $(BIN_DIR)/soak/real.log | grep -E '^(--- FAIL|ok|FAIL)|harness_soak_test.go|harness_(test|outcomes_test).go:[0-9]+: (fault |outcomes|[0-9]+ real|seed [0-9]+: [a-z])'

## mutation-check: the mutation table (scripts/mutations, docs/testing.md): each mutation alone on a scratch copy, caught or not; outside CI. MUTATION_ARGS passes flags (e.g. -only '^20-' or -from HEAD)
mutation-check: tools
	scripts/mutation-check $(MUTATION_ARGS)

## generate: regenerate deepcopy, clientset, listers, informers and CRD manifests
generate:
	@if [ -f scripts/update-codegen.sh ]; then bash scripts/update-codegen.sh; else echo "no code generation yet"; fi

## verify: formatting, vet, and generated code up to date
verify: fmt vet
	@if [ -f scripts/verify-codegen.sh ]; then bash scripts/verify-codegen.sh; else echo "no code generation yet"; fi

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^generated/')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## playground: the local playground in the foreground (see docs/playground.md); Ctrl-C stops it
playground: tools build
	$(BIN_DIR)/bloodraven-playground run

## playground-up: the playground in the background; returns once the group is Ready and writes bin/playground/env
playground-up: tools build
	$(BIN_DIR)/bloodraven-playground up

## playground-down: stop what playground-up started
playground-down:
	@if [ -x $(BIN_DIR)/bloodraven-playground ]; then $(BIN_DIR)/bloodraven-playground down; else echo "no playground binary, nothing to stop"; fi

## e2e: end-to-end tests that drive a whole playground as a user would (build tag e2e)
E2E_TIMEOUT ?= 15m
e2e: tools build
	$(GO) test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) ./e2e/scenarios/...

clean:
	rm -rf $(BIN_DIR)
