#!/usr/bin/env bash
# Wall time of one-shot `conclave kv put` and `kv get` processes against a
# 3-node TLS cluster on loopback: starts the cluster in a temporary
# directory, runs N sequential puts and N gets (each a new process, from exec
# to exit), prints median, p90 and p99 in milliseconds, and brings the
# cluster down. With --compare, every run is paired with one of the same
# operation over `kv --dial-all` (every member dialed at once, no primary
# hint: the path without the fast start), alternating, so that both see the
# same machine load.
#
#   scripts/bench-kv-oneshot.sh [-n N] [--compare] [--insecure] [--nodes K]
#
# The primary cache lives in the temporary directory (--cache-dir), not in
# ~/.cache. Figures depend on the machine's load: run it on an idle machine.
# Every node is stopped by pid (`cluster down`, else the pid files).
set -euo pipefail
cd "$(dirname "$0")/.."
conclave=${CONCLAVE_BIN:-./build/bin/conclave}
runs=200
compare=0
nodes=3
up_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs=$2; shift 2 ;;
    --compare) compare=1; shift ;;
    --insecure) up_extra+=(--insecure); shift ;;
    --nodes) nodes=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-kv-oneshot: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$conclave" ] || { echo "bench-kv-oneshot: no $conclave (run scripts/build.sh)" >&2; exit 2; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-kv-oneshot: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/conclave-kv-oneshot.XXXXXX")
dir=$tmp/cluster
cleanup() {
  if ! "$conclave" cluster down --dir "$dir" >/dev/null 2>&1; then
    for f in "$dir"/node-*/node.pid; do
      [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$conclave" cluster up --dir "$dir" --nodes "$nodes" "${up_extra[@]}" >/dev/null
kv=("$conclave" kv --dir "$dir" --cache-dir "$tmp/cache" --timeout-ms 5000)
# The first write also waits for the primary's sync phase; not measured.
"${kv[@]}" put warm-up 1 >/dev/null
"${kv[@]}" --dial-all put warm-up 1 >/dev/null

# Runs "$@" once; appends its wall time (ms) to the file named by $out.
timed() {
  local t0=$EPOCHREALTIME
  "$@" >/dev/null || { echo "bench-kv-oneshot: failed: $*" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  local us=$((10#${t1/./} - 10#${t0/./}))
  printf '%d.%03d\n' $((us / 1000)) $((us % 1000)) >>"$out"
}

for i in $(seq "$runs"); do
  out=$tmp/put.fast timed "${kv[@]}" put "bench-$i" "value-$i"
  if [ "$compare" = 1 ]; then
    out=$tmp/put.all timed "${kv[@]}" --dial-all put "bench-$i" "value-$i"
  fi
  out=$tmp/get.fast timed "${kv[@]}" get "bench-$i"
  if [ "$compare" = 1 ]; then
    out=$tmp/get.all timed "${kv[@]}" --dial-all get "bench-$i"
  fi
done

# median / p90 / p99 of a file of numbers (nearest rank).
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 }
    function rank(p) { r = int(p * NR + 0.999999); return v[r < 1 ? 1 : r] }
    END { printf "%8.2f %8.2f %8.2f %6d\n", rank(0.5), rank(0.9), rank(0.99), NR }'
}

echo "conclave kv, one process per operation, $nodes-node cluster on loopback" \
  "(${up_extra[*]:-TLS}), $runs runs each; wall ms from exec to exit"
printf '%-28s %8s %8s %8s %6s\n' operation median p90 p99 runs
for op in put get; do
  printf '%-28s %s\n' "$op" "$(stats "$tmp/$op.fast")"
  if [ "$compare" = 1 ]; then
    printf '%-28s %s\n' "$op --dial-all" "$(stats "$tmp/$op.all")"
  fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
