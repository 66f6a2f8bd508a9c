#!/usr/bin/env bash
# Builds the Kubernetes control plane that the integration tests and the
# playground run, from Go modules only (these machines cannot download
# binaries and have no container engine):
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes, tools/controlplane)
#   etcd                                                             (go.etcd.io/etcd/server/v3, tools/controlplane)
#   kwok                                                             (sigs.k8s.io/kwok, pinned below)
#   promtool                                                         (github.com/prometheus/prometheus, pinned below;
#                                                                     tests the alerting rules of deploy/components/monitoring)
#   versitygw                                                        (github.com/versity/versitygw, pinned below; the S3
#                                                                     server of the backup store tests, pkg/testbed/s3server)
#
# Binaries land in $BIN_DIR (default: <repo>/bin, git-ignored). Each binary
# has a stamp file recording the pinned version it was built from; a binary
# is rebuilt only when it is missing or its pin changed. The script prints
# what it did and how long each step took.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
BIN_DIR=${BIN_DIR:-$repo/bin}
KWOK_VERSION=v0.8.0
PROMTOOL_VERSION=v0.316.0
VERSITYGW_VERSION=v1.8.0
tools=$repo/tools/controlplane
mkdir -p "$BIN_DIR"

log() { printf '[build-controlplane] %s\n' "$*"; }

k8s_version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd "$tools" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
go_version=$(go env GOVERSION)
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"

# pin NAME prints the stamp a binary must carry to count as up to date.
pin() {
  case $1 in
    etcd) echo "etcd $etcd_version $go_version" ;;
    kwok) echo "kwok $KWOK_VERSION $go_version" ;;
    promtool) echo "promtool $PROMTOOL_VERSION $go_version" ;;
    versitygw) echo "versitygw $VERSITYGW_VERSION $go_version" ;;
    *) echo "$1 $k8s_version $go_version $(sha256sum "$tools/go.sum" | cut -c1-16)" ;;
  esac
}

up_to_date() {
  [ -x "$BIN_DIR/$1" ] && [ -f "$BIN_DIR/.$1.stamp" ] && [ "$(cat "$BIN_DIR/.$1.stamp")" = "$(pin "$1")" ]
}

stamp() { pin "$1" > "$BIN_DIR/.$1.stamp"; }

timed() {
  local what=$1; shift
  local start=$SECONDS
  log "building $what ..."
  "$@"
  log "built $what in $((SECONDS - start))s"
}

total_start=$SECONDS
k8s_missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if up_to_date "$b"; then log "$b is up to date ($(pin "$b" | cut -d' ' -f2))"; else k8s_missing+=("$b"); fi
done

if [ ${#k8s_missing[@]} -gt 0 ]; then
  pkgs=()
  for b in "${k8s_missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  # One go build for all of them: they share most packages, so the compile
  # is done once and both cores stay busy.
  timed "${k8s_missing[*]} $k8s_version" \
    bash -c 'cd "$1" && shift && out=$1 && shift && ldf=$1 && shift && go build -trimpath -ldflags "$ldf" -o "$out/" "$@"' \
    _ "$tools" "$BIN_DIR" "$ldflags" "${pkgs[@]}"
  for b in "${k8s_missing[@]}"; do stamp "$b"; done
fi

if up_to_date etcd; then
  log "etcd is up to date ($etcd_version)"
else
  timed "etcd $etcd_version" bash -c 'cd "$1" && go build -trimpath -ldflags "-s -w" -o "$2/etcd" go.etcd.io/etcd/server/v3' _ "$tools" "$BIN_DIR"
  stamp etcd
fi

if up_to_date kwok; then
  log "kwok is up to date ($KWOK_VERSION)"
else
  timed "kwok $KWOK_VERSION" env GOBIN="$BIN_DIR" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  stamp kwok
fi

if up_to_date promtool; then
  log "promtool is up to date ($PROMTOOL_VERSION)"
else
  timed "promtool $PROMTOOL_VERSION" env GOBIN="$BIN_DIR" go install -trimpath -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
  stamp promtool
fi

if up_to_date versitygw; then
  log "versitygw is up to date ($VERSITYGW_VERSION)"
else
  timed "versitygw $VERSITYGW_VERSION" env GOBIN="$BIN_DIR" go install -trimpath -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  stamp versitygw
fi

# kwok needs its stage definitions (fake node heartbeat, pod readiness); they
# ship in its module, so copy them next to the binary.
# Only the YAML is copied: the module's Go test files would otherwise become
# packages of this repository when bin/ sits inside it, and `go vet ./...`
# would try to build them. The copy format is part of the marker so an older
# copy (which included them) is replaced.
stages=$BIN_DIR/kwok-stages
stages_marker="$KWOK_VERSION yaml-only"
if [ ! -f "$stages/.version" ] || [ "$(cat "$stages/.version")" != "$stages_marker" ]; then
  moddir=$(cd "$tools" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$stages" && mkdir -p "$stages"
  (cd "$moddir/kustomize/stage" && find . -name '*.yaml' -print0 | xargs -0 -I{} cp --parents {} "$stages/")
  chmod -R u+w "$stages"
  echo "$stages_marker" > "$stages/.version"
  log "copied kwok stages to $stages"
fi

# kwok's PortForward CRD: the playground's node agent declares, per pod, where
# kwok's kubelet server forwards a port-forward to (the pod's simulated mysqld
# and its sidecar), so `kubectl port-forward` works against kwok nodes as
# against a kubelet.
crds=$BIN_DIR/kwok-crds
if [ ! -f "$crds/.version" ] || [ "$(cat "$crds/.version")" != "$KWOK_VERSION" ]; then
  moddir=$(cd "$tools" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$crds" && mkdir -p "$crds"
  cp "$moddir/kustomize/crd/bases/kwok.x-k8s.io_portforwards.yaml" "$crds/"
  chmod -R u+w "$crds"
  echo "$KWOK_VERSION" > "$crds/.version"
  log "copied kwok's PortForward CRD to $crds"
fi

# bin/ is a build output, never Go packages of this module: a go.mod of its own
# keeps ./... patterns out of it whatever lands there.
[ -f "$BIN_DIR/go.mod" ] || printf 'module bloodraven.local/bin\n' > "$BIN_DIR/go.mod"

log "done in $((SECONDS - total_start))s; binaries in $BIN_DIR"
