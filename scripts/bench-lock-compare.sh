#!/usr/bin/env bash
# The lock scenario (scripts/lock-scenario.sh) against etcd, then against
# conclave, with the same seed, duration and clients; prints both results side
# by side. Figures, not a verdict: it exits 0 whatever the checker found, 2 if a
# harness failed. A system that is not available (no etcd installed, or a
# conclave without `conclave lock`) gets one line saying so.
#   scripts/bench-lock-compare.sh [--duration S] [--clients N] [--seed S]
#       [--ttl S] [--grace S] [--no-build] [more lock-scenario.sh options]
# Logs of both runs are kept in a temporary directory (printed at the end).
set -uo pipefail
cd "$(dirname "$0")/.."
duration=120 clients=3 seed=1 build=1 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
if [ "$build" = 1 ]; then
  if [ -f build/CMakeCache.txt ]; then
    cmake --build build -j "${CONCLAVE_JOBS:-2}" --target conclave lock_probe_child lock_history_check >&2 || exit 2
  else
    bash scripts/build.sh >&2 || exit 2
  fi
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/bench-lock-compare.XXXXXX")
declare -A result
harness_failed=0
for system in etcd conclave; do
  echo "== $system: lock-scenario.sh --duration $duration --clients $clients --seed $seed ${extra[*]}" >&2
  bash scripts/lock-scenario.sh --system "$system" --duration "$duration" \
    --clients "$clients" --seed "$seed" "${extra[@]}" >"$logs/$system.out" 2>"$logs/$system.err"
  rc=$?
  case "$rc" in
    0|1) result[$system]=$(grep '^result ' "$logs/$system.out" | tail -n 1 | cut -d' ' -f3-) ;;
    77) result[$system]="not available: $(tail -n 1 "$logs/$system.err" | sed 's/^lock-scenario: //')" ;;
    *) result[$system]="harness failed (exit $rc), see $logs/$system.err"; harness_failed=1 ;;
  esac
  grep -v '^result ' "$logs/$system.out" | grep -E '^(violation|summary|malformed|\.\.\.)' | head -n 8 >&2
done

field() { # field NAME RESULT
  local v
  v=$(tr ' ' '\n' <<<"$2" | grep "^$1=" | cut -d= -f2-)
  echo "${v:--}"
}
echo
echo "lock scenario, seed $seed, ${duration} s, $clients clients (logs in $logs)"
printf '%-9s %8s %10s %8s %6s %6s %15s  %s\n' system holders violations overlap order stale max_overlap_ms "faults / overlaps after each"
for system in etcd conclave; do
  r=${result[$system]}
  if [[ $r == *=* ]]; then
    printf '%-9s %8s %10s %8s %6s %6s %15s  %s\n' "$system" "$(field holders "$r")" \
      "$(field violations "$r")" "$(field overlap "$r")" "$(field order "$r")" \
      "$(field stale "$r")" "$(field max_overlap_ms "$r")" \
      "$(field faults "$r") / $(field overlaps_after "$r")"
  else
    printf '%-9s %s\n' "$system" "$r"
  fi
done
[ "$harness_failed" = 0 ] || exit 2
