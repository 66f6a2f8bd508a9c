# Bloodraven build entry points. `make test` is the README's test command;
# it builds the control plane it needs first.
SHELL := /bin/bash
GO ?= go
BIN_DIR ?= $(CURDIR)/bin
export BIN_DIR
# Integration packages each start their own kube-apiserver; keep the whole
# run bounded so a hung test fails instead of stalling CI.
TEST_TIMEOUT ?= 20m

.PHONY: all build tools test unit generate verify fmt vet playground clean

all: build

## build: compile every binary under cmd/ into bin/
build:
	@mkdir -p $(BIN_DIR)
	@if $(GO) list ./cmd/... >/dev/null 2>&1; then $(GO) build -o $(BIN_DIR)/ ./cmd/...; else echo "no binaries under cmd/ yet"; fi

## tools: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from Go modules
tools:
	@bash scripts/build-controlplane.sh

## test: unit and integration tests (integration tests run a real etcd + kube-apiserver)
test: tools
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

## unit: only the tests that need no control plane (fast feedback while editing)
unit:
	$(GO) test -count=1 -short ./...

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

## playground: the local playground (not available yet; see README)
playground:
	@echo "The playground (make playground) is not built yet: it lands with the playground-and-e2e issue." >&2
	@exit 1

clean:
	rm -rf $(BIN_DIR)
