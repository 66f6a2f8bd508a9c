#!/usr/bin/env bash
# Measures /deploy/v1 latency: GET of a group and renewal of a migration
# lease, at a fixed open-loop request rate, over TLS on loopback, against a
# real kube-apiserver + etcd (bin/, built by scripts/build-controlplane.sh).
# Prints p50/p99/max per request kind. Figures only; nothing is asserted.
#
#   scripts/bench-deploy-api.sh [requests-per-kind] [rate-per-second] [groups]
#
# Defaults: 500 requests at 50 req/s (10 s per kind) over 100 groups, one
# migration lease each (renewals rotate over them, as many deployments
# renewing every ttl/3 would). BENCH_SELECTABLE_FIELD=1 in the environment
# first declares spec.failoverGroupRef.name selectable on the MysqlDatabase
# CRD, so each request lists only its group's databases.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
requests=${1:-500}
rate=${2:-50}
groups=${3:-100}
cd "$repo"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
BENCH_RATE=$rate BENCH_GROUPS=$groups go test ./pkg/deployapi/deployapiintegration -run '^$' \
  -bench 'LatencyAtFixedRate' -benchtime "${requests}x" -count 1 -timeout 10m \
  | grep -E '^(deploy api|Benchmark|PASS|FAIL|ok)' | grep -v ', 1 requests:'
