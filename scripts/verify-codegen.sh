#!/usr/bin/env bash
# Fails when the committed generated code or CRD manifests differ from what
# scripts/update-codegen.sh produces from the current types. It regenerates
# into a temporary copy of the tree, so the working tree is never touched.
#
# Usage: scripts/verify-codegen.sh   (make verify)
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-verify-codegen.XXXXXX")"
trap 'rm -rf "${TMP_ROOT}"' EXIT

# Copy the tree without .git and build outputs.
tar -C "${SCRIPT_ROOT}" --exclude=./.git --exclude=./bin -cf - . | tar -C "${TMP_ROOT}" -xf -

"${TMP_ROOT}/scripts/update-codegen.sh" >/dev/null

# Compare every generated location, including files that exist on only one side.
status=0
for path in generated deploy/crds pkg/apis docs/api.md; do
    if ! diff -Nru "${SCRIPT_ROOT}/${path}" "${TMP_ROOT}/${path}" >"${TMP_ROOT}.diff" 2>&1; then
        echo "ERROR: ${path} is out of date with the API types. Run scripts/update-codegen.sh (make generate) and commit the result:" >&2
        sed -e "s#${TMP_ROOT}#(regenerated)#g" -e "s#${SCRIPT_ROOT}#(committed)#g" "${TMP_ROOT}.diff" >&2
        status=1
    fi
done
rm -f "${TMP_ROOT}.diff"
if [[ ${status} -eq 0 ]]; then
    echo "generated code and CRD manifests are up to date"
fi
exit ${status}
