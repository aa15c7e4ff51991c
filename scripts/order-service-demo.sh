#!/usr/bin/env bash
# The order workflow on a 5-node cluster of examples/order_service: 20 orders
# are submitted as 3-step jobs (reserve, payment, ship) with `conclave job
# submit`, the leader is killed with kill -9 after the tenth, and the script
# waits for every order, then prints each order's account (state, and per
# step its attempts and failures, from `job get --json`) and the effects the
# services recorded per idempotency key. The payment service fails about 3
# tries in 10 (transiently): those failures show as attempts and failures.
#
# Exits 0 if every order was processed and every key took effect exactly
# once; 1 otherwise. Builds first (scripts/build.sh, after scripts/setup.sh)
# unless both binaries are given.
#
#   bash scripts/order-service-demo.sh [--dir CLUSTER_DIR] [--effects DIR]
#        [--conclave BIN] [--program BIN] [--keep]
#
# --keep leaves the cluster running and its files in place (bring it down
# with `conclave cluster down --dir CLUSTER_DIR`); otherwise the script stops
# the cluster however it ends, and removes its files if it made them.
set -euo pipefail
cd "$(dirname "$0")/.."

dir= effects= conclave= program= keep=0
while [ $# -gt 0 ]; do
  case $1 in
  --dir) dir=$2; shift 2 ;;
  --effects) effects=$2; shift 2 ;;
  --conclave) conclave=$2; shift 2 ;;
  --program) program=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  *) echo "usage: $0 [--dir DIR] [--effects DIR] [--conclave BIN] [--program BIN] [--keep]" >&2
     exit 2 ;;
  esac
done
if [ -z "$conclave" ] || [ -z "$program" ]; then
  bash scripts/build.sh
  conclave=${conclave:-./build/bin/conclave}
  program=${program:-./build/bin/order_service}
fi
command -v jq >/dev/null || { echo "order-service-demo: needs jq (apt-get install jq)" >&2; exit 2; }
orders=20
work=
if [ -z "$dir" ] || [ -z "$effects" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/conclave-orders.XXXXXX")
  dir=${dir:-$work/cluster}
  effects=${effects:-$work/effects}
fi
finish() {
  local status=$?
  if [ "$keep" = 0 ]; then
    "$conclave" cluster down --dir "$dir" >/dev/null 2>&1 || true
    [ -z "$work" ] || rm -rf "$work"
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

echo "== conclave cluster up --nodes 5 --program order_service -- --effects $effects"
mkdir -p "$effects"
"$conclave" cluster up --nodes 5 --dir "$dir" --program "$program" -- --effects "$effects"
echo

# --attempts 1: each try is one dispatch, so a failed payment shows in the
# step's attempt and failure count (with more tries per dispatch the agent
# retries it quietly). --failure-threshold 10: payment fails up to 3 times,
# and a step on the killed node costs one more.
submit() {
  local id=$1 n=$2 out
  for _ in $(seq 1 20); do
    if out=$("$conclave" job submit --dir "$dir" --id "$id" --attempts 1 \
      --failure-threshold 10 --timeout 10s "reserve:$n" "payment:$n" "ship:$n" 2>&1); then
      echo "submitted $out"
      return 0
    fi
    # An answer lost in the failover: the submission may have committed.
    case $out in *exists*) echo "submitted $id (committed before the failover)"; return 0 ;; esac
    sleep 0.2
  done
  echo "order-service-demo: $id not accepted: $out" >&2
  return 1
}

echo "== $orders orders, 3 steps each; kill -9 of the leader after the tenth"
for n in $(seq 1 "$orders"); do
  submit "order-$n" "$n"
  if [ "$n" = $((orders / 2)) ]; then
    echo "-- in flight now:"
    "$conclave" job list --dir "$dir" --state processing
    echo "-- conclave cluster kill --leader --signal KILL --wait"
    "$conclave" cluster kill --dir "$dir" --leader --signal KILL --wait
  fi
done
echo

echo "== waiting for every order (conclave job watch, 60 s each at most)"
not_processed=0
for n in $(seq 1 "$orders"); do
  "$conclave" job watch --dir "$dir" --wait-timeout 60s "order-$n" >/dev/null \
    || not_processed=$((not_processed + 1))
done
"$conclave" job list --dir "$dir" --limit 0
echo

echo "== every order's account (attempts/failures per step, from job get --json)"
printf '%-10s %-11s %-9s %-9s %-9s %s\n' order state reserve payment ship "why a step was tried again"
payment_failures=0
for n in $(seq 1 "$orders"); do
  json=$("$conclave" job get --dir "$dir" --json "order-$n")
  read -r state r p s pf < <(jq -r '[.state] + (.steps | map("\(.attempt)/\(.failure_count)"))
      + [(.steps[1].failure_count)] | join(" ")' <<<"$json")
  why=$(jq -r '[.steps[] | select(.failure_count > 0) | "\(.kind): \(.last_error)"] | join("; ")' <<<"$json")
  payment_failures=$((payment_failures + pf))
  printf '%-10s %-11s %-9s %-9s %-9s %s\n' "order-$n" "$state" "$r" "$p" "$s" "$why"
done
busy=$(grep -c '^payment .* transient card_network_busy$' "$effects/tries.log" || true)
echo "payment: $busy tries refused by the card network; $payment_failures payment failures recorded"
echo

echo "== effects per idempotency key ($effects/effects.log; each must be exactly 1)"
effects_wrong=0
for n in $(seq 1 "$orders"); do
  line="order-$n:"
  for step in 0 1 2; do
    key="order-$n/$step"
    count=$(awk -v k="$key" '$2 == k' "$effects/effects.log" | wc -l)
    kind=$(awk -v k="$key" '$2 == k { print $1; exit }' "$effects/effects.log")
    line+=" ${kind:-?} ${key} x${count}"
    [ "$count" = 1 ] || effects_wrong=$((effects_wrong + 1))
  done
  echo "$line"
done
echo "$(wc -l <"$effects/effects.log") effects for $((orders * 3)) keys; $(wc -l <"$effects/tries.log") tries"
echo

echo "== the leader tasks (node logs)"
grep -h "leading in term" "$dir"/node-*/node.log | sort || true
echo

if [ "$not_processed" != 0 ] || [ "$effects_wrong" != 0 ]; then
  echo "order-service-demo: FAILED: $not_processed orders not processed," \
    "$effects_wrong keys without exactly one effect" >&2
  exit 1
fi
echo "order-service-demo: all $orders orders processed, every key took effect exactly once"
