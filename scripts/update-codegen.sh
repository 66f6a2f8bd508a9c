#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#   - zz_generated.deepcopy.go next to the types (deepcopy-gen),
#   - the typed clientset, listers and informers under generated/
#     (client-gen, lister-gen, informer-gen with watch support),
#   - the CRD manifests under deploy/crds/ (controller-gen),
#   - the field reference inside docs/api.md (tools/codegen/apidocs).
# The output is a pure function of the types and the pinned generator
# versions (k8s.io/code-generator from go.mod, controller-tools from
# tools/codegen/go.mod), so running it twice gives identical bytes.
#
# Usage: scripts/update-codegen.sh   (make generate)
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${SCRIPT_ROOT}"

THIS_PKG="github.com/shipstream/bloodraven"
CODEGEN_VERSION="v0.37.2"
BOILERPLATE="${SCRIPT_ROOT}/tools/codegen/boilerplate.go.txt"

# Generator binaries are built into a per-user cache, never into the repo.
CODEGEN_BIN="${CODEGEN_BIN:-$(go env GOCACHE)/bloodraven-codegen-bin}"
mkdir -p "${CODEGEN_BIN}"
export GOBIN="${CODEGEN_BIN}"

# kube_codegen.sh ships inside the code-generator module; take it from the
# module cache at the pinned version (downloaded through the module proxy).
CODEGEN_PKG="${CODEGEN_PKG:-$(go mod download -json "k8s.io/code-generator@${CODEGEN_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')}"
if [[ -z "${CODEGEN_PKG}" || ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
    echo "cannot find kube_codegen.sh of k8s.io/code-generator@${CODEGEN_VERSION}" >&2
    exit 1
fi
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

# gen_client deletes and rewrites its output directories.
kube::codegen::gen_client \
    --with-watch \
    --output-dir "${SCRIPT_ROOT}/generated" \
    --output-pkg "${THIS_PKG}/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

echo "Generating CRD manifests into deploy/crds"
go -C "${SCRIPT_ROOT}/tools/codegen" build -o "${CODEGEN_BIN}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
rm -f "${SCRIPT_ROOT}"/deploy/crds/shipstream.io_*.yaml
"${CODEGEN_BIN}/controller-gen" \
    crd:crdVersions=v1 \
    paths="./pkg/apis/..." \
    output:crd:dir="${SCRIPT_ROOT}/deploy/crds"

echo "Generating the field reference of docs/api.md"
go -C "${SCRIPT_ROOT}/tools/codegen" build -o "${CODEGEN_BIN}/apidocs" ./apidocs
"${CODEGEN_BIN}/apidocs" "${SCRIPT_ROOT}/deploy/crds" "${SCRIPT_ROOT}/docs/api.md"
