#!/usr/bin/env bash
# Workflow figures across nodes (tests/bench/workflow/workflow_cluster_bench.cpp,
# docs/design/workflow.md "Figures across nodes"): starts a 3-node cluster on
# loopback with `conclave cluster up` (TLS, durable store: the defaults) in a
# temporary directory, runs the bench program against it as a client in its
# own process, and brings the cluster down however the run ends.
#
# First, for comparison, the in-process figure of the same workload
# (workflow_bench: 1-step jobs on one durable store in one process, one
# round), unless --no-inprocess is given. Extra arguments go to
# workflow_cluster_bench, e.g. --jobs 5000 --kills 20 --pending 100000
# --only throughput. KEEP=1 keeps the cluster directory (node logs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CONCLAVE_BUILD_DIR:-$root/build}/bin"
conclave="$bin/conclave"
for b in "$conclave" "$bin/workflow_cluster_bench"; do
  [ -x "$b" ] || { echo "missing $b: run scripts/build.sh first" >&2; exit 2; }
done

inprocess=1
jobs=2000
args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --no-inprocess) inprocess=0 ;;
    --jobs) jobs="$2"; args+=("$1" "$2"); shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

dir="$(mktemp -d /tmp/conclave-wf-cluster.XXXXXX)"
cleanup() {
  "$conclave" cluster down --dir "$dir" >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then
    echo "cluster directory kept: $dir"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$inprocess" = 1 ] && [ -x "$bin/workflow_bench" ]; then
  echo "== in-process (workflow_bench, one durable store, one process) =="
  "$bin/workflow_bench" --only throughput --store durable --steps 1 --jobs "$jobs" --rounds 1
fi

echo "== across nodes: conclave cluster up --nodes 3 --dir $dir =="
"$conclave" cluster up --nodes 3 --dir "$dir"
"$bin/workflow_cluster_bench" --dir "$dir" --conclave "$conclave" "${args[@]}"
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
