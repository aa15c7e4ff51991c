#!/usr/bin/env bash
# Schedules per second of `conclave sim --workload jobs` for two conclave
# binaries side by side (e.g. one built from an older commit in another build
# directory, and build/bin/conclave). Runs them alternately, --reps times each,
# with the same seeds and faults, and prints the median schedules per CPU
# second (user + system: steadier than wall time on a shared machine) and per
# wall second. Figures, not a verdict.
#   scripts/bench-sim-jobs.sh OLD_BINARY NEW_BINARY [--runs N] [--reps K]
#       [--faults SPEC]
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$1 new=$2
shift 2
runs=300 reps=5 faults='random=4,loss=0.02,dup=0.02,delay=1ms..3ms'
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    *) echo "bench-sim-jobs: unknown option '$1'" >&2; exit 2 ;;
  esac
done
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "bench-sim-jobs: '$b' is not an executable" >&2; exit 2; }
done
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A cpu wall
for ((i = 0; i < reps; i++)); do
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    t=$( { /usr/bin/time -f '%U %S %e' "$bin" sim --workload jobs --runs "$runs" --seed 1 \
             --faults "$faults" >/dev/null 2>/dev/null; } 2>&1 | tail -n 1)
    read -r u s e <<<"$t"
    cpu[$which]+="$(awk -v r="$runs" -v u="$u" -v s="$s" 'BEGIN {printf "%.1f", r / (u + s)}') "
    wall[$which]+="$(awk -v r="$runs" -v e="$e" 'BEGIN {printf "%.1f", r / e}') "
  done
done
echo "jobs workload, $runs runs x $reps reps each, faults '$faults' (medians)"
printf '%-8s %22s %22s  %s\n' "" "schedules/CPU-second" "schedules/wall-second" "binary"
for which in old new; do
  bin=$old
  [ "$which" = new ] && bin=$new
  c=$(tr ' ' '\n' <<<"${cpu[$which]}" | grep . | median)
  w=$(tr ' ' '\n' <<<"${wall[$which]}" | grep . | median)
  printf '%-8s %22s %22s  %s\n' "$which" "$c" "$w" "$bin"
done
