#!/usr/bin/env bash
# How soon the leader task of a node that lost its lease stops, read from the
# node's own log (tests/bench/election/leader_cancel_bench.cpp; figures in
# docs/design/election.md, "Leader task cancellation"): a 3-node cluster of
# examples/embedded_node on loopback, the leader SIGSTOPped until the others
# elect a new one, then resumed; the time from its "stopped acting as leader"
# line to its task's "stopped leading" line, median and max over the rounds.
#
#   scripts/bench-leader-cancel.sh [--rounds R] [--baseline DIR] [--keep DIR]
#
# --baseline DIR: the same rounds first with DIR's `conclave` and
# `embedded_node` (a build of another revision), side by side. Every cluster
# is brought down however the run ends.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CONCLAVE_BUILD_DIR:-$root/build}/bin"

usage() {
  echo "bench-leader-cancel.sh: $1 (usage: [--rounds R] [--baseline DIR] [--keep DIR])" >&2
  exit 2
}
rounds=10
baseline=""
args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --rounds) [ "$#" -ge 2 ] || usage "--rounds needs a number"; rounds="$2"; shift ;;
    --baseline) [ "$#" -ge 2 ] || usage "--baseline needs a directory"; baseline="$2"; shift ;;
    --keep) [ "$#" -ge 2 ] || usage "--keep needs a directory"; args+=(--keep "$2"); shift ;;
    *) usage "unknown argument '$1'" ;;
  esac
  shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || usage "--rounds must be a positive number"
for b in "$bin/leader_cancel_bench" "$bin/conclave" "$bin/embedded_node"; do
  [ -x "$b" ] || usage "missing $b: run scripts/build.sh first"
done
if [ -n "$baseline" ]; then
  for b in "$baseline/conclave" "$baseline/embedded_node"; do
    [ -x "$b" ] || usage "--baseline: no executable $b"
  done
fi

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$baseline" ]; then
  echo "== baseline: $baseline =="
  "$bin/leader_cancel_bench" --rounds "$rounds" --conclave "$baseline/conclave" \
    --program "$baseline/embedded_node" || true
  echo "== this build =="
fi
"$bin/leader_cancel_bench" --rounds "$rounds" "${args[@]}"
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
