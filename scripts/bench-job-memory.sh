#!/usr/bin/env bash
# Memory per pending job on each replica (docs/design/workflow.md, "Memory per
# pending job"):
#   1. in one process: job_memory_bench (store rows and the in-memory
#      replication log of N pending jobs, glibc's bytes in use);
#   2. across processes: a 3-node cluster on loopback (`conclave cluster up`,
#      TLS, durable store) in a temporary directory, N pending 1-step jobs
#      submitted by workflow_cluster_bench --only memory, each node's resident
#      set before and after, per node role (the primary serves every read and
#      commit). With --baseline DIR, the same cluster figure with DIR's
#      `conclave` and `workflow_cluster_bench` (a build of another revision:
#      the client encodes the job documents, so both come from DIR), the two
#      alternating, side by side.
#
#   scripts/bench-job-memory.sh [--pending N] [--rounds R] [--baseline DIR]
#
# Loopback only; every cluster is brought down however the run ends.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CONCLAVE_BUILD_DIR:-$root/build}/bin"

pending=100000
rounds=2
baseline=""
usage() {
  echo "bench-job-memory.sh: $1 (usage: [--pending N] [--rounds R] [--baseline DIR])" >&2
  exit 2
}
while [ "$#" -gt 0 ]; do
  case "$1" in
    --pending) [ "$#" -ge 2 ] || usage "--pending needs a number"; pending="$2"; shift ;;
    --rounds) [ "$#" -ge 2 ] || usage "--rounds needs a number"; rounds="$2"; shift ;;
    --baseline) [ "$#" -ge 2 ] || usage "--baseline needs a directory"; baseline="$2"; shift ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
[[ "$pending" =~ ^[1-9][0-9]*$ ]] || usage "--pending must be a positive number"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage "--rounds must be a positive number"
for b in "$bin/conclave" "$bin/workflow_cluster_bench" "$bin/job_memory_bench"; do
  [ -x "$b" ] || usage "missing $b: run scripts/build.sh first"
done
if [ -n "$baseline" ]; then
  for b in "$baseline/conclave" "$baseline/workflow_cluster_bench"; do
    [ -x "$b" ] || usage "--baseline: no executable $b"
  done
fi

dir=""
down() {
  if [ -n "$dir" ]; then
    "$1" cluster down --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
    dir=""
  fi
}
current_conclave="$bin/conclave"
trap 'down "$current_conclave"' EXIT
trap 'exit 130' INT TERM

# One cluster figure, in this shell (so the trap knows the directory): sets
# fig_primary and fig_secondaries (bytes per job).
cluster_figure() {
  local conclave="$1" client="$2" out leader
  current_conclave="$conclave"
  dir="$(mktemp -d /tmp/conclave-job-memory.XXXXXX)"
  "$conclave" cluster up --nodes 3 --dir "$dir" >/dev/null
  out="$("$client" --dir "$dir" --conclave "$conclave" --only memory \
    --memory-mode pending --pending "$pending" 2>&1)"
  leader="$("$conclave" cluster status --dir "$dir" | awk '/LEADER/ {print $1}')"
  down "$conclave"
  fig_primary="$(echo "$out" | awk -v l="$leader" \
    '/^  node [0-9]+: RSS/ {id = $2; sub(":", "", id); if (id == l) print $(NF - 3)}')"
  fig_secondaries="$(echo "$out" | awk -v l="$leader" \
    '/^  node [0-9]+: RSS/ {id = $2; sub(":", "", id); if (id != l) printf "%s%s", sep, $(NF - 3); sep = ", "}')"
  if [ -z "$fig_primary" ]; then
    echo "no figure from $client:" >&2
    echo "$out" >&2
    exit 1
  fi
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== in one process: job_memory_bench --jobs $pending =="
"$bin/job_memory_bench" --jobs "$pending"

echo "== 3-node cluster, $pending pending 1-step jobs, resident bytes per job =="
printf '%-6s %-10s %10s %22s\n' round build primary secondaries
for ((r = 1; r <= rounds; ++r)); do
  if [ -n "$baseline" ]; then
    cluster_figure "$baseline/conclave" "$baseline/workflow_cluster_bench"
    printf '%-6s %-10s %10s %22s\n' "$r" baseline "$fig_primary" "$fig_secondaries"
  fi
  cluster_figure "$bin/conclave" "$bin/workflow_cluster_bench"
  printf '%-6s %-10s %10s %22s\n' "$r" this "$fig_primary" "$fig_secondaries"
done
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
