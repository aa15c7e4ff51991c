#!/usr/bin/env bash
# Schedules per second of `conclave sim --workload jobs` for two conclave
# binaries side by side (e.g. one built from an older commit in another build
# directory, and build/bin/conclave). Runs them alternately, --reps times each,
# with the same seeds and faults, and prints the median schedules per CPU
# second (user + system: steadier than wall time on a shared machine) and per
# wall second. Each binary runs with its own defaults; --threads N runs the
# new one twice, with --threads 1 and with --threads N (runs at once).
# --workload replication measures that workload instead. Figures, not a
# verdict.
#   scripts/bench-sim-jobs.sh OLD_BINARY NEW_BINARY [--runs N] [--reps K]
#       [--faults SPEC] [--threads N] [--workload jobs|replication]
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$1 new=$2
shift 2
runs=300 reps=5 faults='random=4,loss=0.02,dup=0.02,delay=1ms..3ms' threads='' workload=jobs
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --workload) workload=$2; shift 2 ;;
    *) echo "bench-sim-jobs: unknown option '$1'" >&2; exit 2 ;;
  esac
done
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "bench-sim-jobs: '$b' is not an executable" >&2; exit 2; }
done
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
times=$(mktemp)
trap 'rm -f "$times"' EXIT
declare -A cpu wall
kinds=(old new)
[ -n "$threads" ] && kinds+=(threaded)
for ((i = 0; i < reps; i++)); do
  for which in "${kinds[@]}"; do
    bin=$new extra=()
    [ "$which" = old ] && bin=$old
    [ "$which" = new ] && [ -n "$threads" ] && extra=(--threads 1)
    [ "$which" = threaded ] && extra=(--threads "$threads")
    /usr/bin/time -o "$times" -f '%U %S %e' "$bin" sim --workload "$workload" \
      --runs "$runs" --seed 1 --faults "$faults" "${extra[@]}" >/dev/null 2>&1
    read -r u s e < <(tail -n 1 "$times")
    cpu[$which]+="$(awk -v r="$runs" -v u="$u" -v s="$s" 'BEGIN {printf "%.1f", r / (u + s)}') "
    wall[$which]+="$(awk -v r="$runs" -v e="$e" 'BEGIN {printf "%.1f", r / e}') "
  done
done
echo "$workload workload, $runs runs x $reps reps each, faults '$faults' (medians)"
printf '%-9s %22s %22s  %s\n' "" "schedules/CPU-second" "schedules/wall-second" "binary"
for which in "${kinds[@]}"; do
  bin=$new label=$new
  [ "$which" = old ] && bin=$old label=$old
  [ "$which" = new ] && [ -n "$threads" ] && label="$new --threads 1"
  [ "$which" = threaded ] && label="$new --threads $threads"
  c=$(tr ' ' '\n' <<<"${cpu[$which]}" | grep . | median)
  w=$(tr ' ' '\n' <<<"${wall[$which]}" | grep . | median)
  printf '%-9s %22s %22s  %s\n' "$which" "$c" "$w" "$label"
done
