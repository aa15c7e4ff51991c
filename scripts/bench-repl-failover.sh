#!/usr/bin/env bash
# Replicated store failover, end to end with real processes: a 3-node
# `cluster up` (TLS, default timing), then per round SIGKILL of the primary and
# `conclave kv put` retried until the first write is acknowledged by the new
# primary; the killed node is restarted and the replicas compared (digest)
# before the next round. Prints every round, the median, and, measured in the
# same run, the median of a `kv put` against a healthy cluster: every figure
# includes starting a kv process and its TLS connection, so compare the
# failover median with that baseline, not with 0.
#
#   scripts/bench-repl-failover.sh [ROUNDS (default 10)] [NODES (default 3)]
#
# Loopback only; the cluster is brought down (by pid, `cluster down`) on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
nodes=${2:-3}
bin=./build/bin/conclave
dir=$(mktemp -d /tmp/conclave-repl-bench.XXXXXX)
trap '$bin cluster down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Retries during a failover give up after 500 ms each and start again.
kv() { $bin kv --cluster-dir "$dir" --timeout-ms "${KV_TIMEOUT_MS:-500}" "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

$bin cluster up --nodes "$nodes" --dir "$dir" >/dev/null
until kv put warmup 1 >/dev/null 2>&1; do sleep 0.05; done

baseline=()
for i in $(seq 1 10); do
  t0=$(now_ms)
  KV_TIMEOUT_MS=5000 kv put base "$i" >/dev/null
  baseline+=($(( $(now_ms) - t0 )))
done

failover=()
for r in $(seq 1 "$rounds"); do
  leader=$($bin cluster status --json --dir "$dir" | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
  t0=$(now_ms)
  $bin cluster kill --dir "$dir" --node "$leader" --signal KILL >/dev/null
  until kv put "round$r" "$r" >/dev/null 2>&1; do :; done
  ms=$(( $(now_ms) - t0 ))
  failover+=("$ms")
  $bin cluster restart --dir "$dir" --node "$leader" >/dev/null
  # Every replica has applied the same records before the next round.
  for _ in $(seq 1 100); do
    same=$($bin cluster status --json --dir "$dir" | python3 -c '
import json,sys
n=[x["replica"] for x in json.load(sys.stdin)["nodes"] if x["alive"] and x["replica"]]
print(int(len(n)=='"$nodes"' and len({(x["applied_lsn"],x["digest"]) for x in n})==1))')
    [ "$same" = 1 ] && break
    sleep 0.05
  done
  echo "round $r: killed primary $leader, first commit on the new primary after ${ms} ms (replicas equal: $same)"
done

echo "kv put on a healthy cluster (process start + TLS connect + commit): median $(printf '%s\n' "${baseline[@]}" | median) ms of ${#baseline[@]}"
echo "SIGKILL of the primary -> first acknowledged commit: median $(printf '%s\n' "${failover[@]}" | median) ms of ${#failover[@]} (min $(printf '%s\n' "${failover[@]}" | sort -n | head -1), max $(printf '%s\n' "${failover[@]}" | sort -n | tail -1))"
