#!/usr/bin/env bash
# Replicated store failover as an application sees it: a 3-node `cluster up`
# (TLS), a client process already connected to every member (the client
# library, repl_bench --failover) writing strong puts in a loop; per round
# SIGKILL of the primary, time to the first commit acknowledged by the new
# primary and the gap between acknowledgements, then the killed node is
# restarted and the replicas compared (digest). Runs the default timing, then
# the faster profile (docs/design/node.md, "Default timing"), one after the other in
# one run. Prints every round, medians and p90.
#
#   scripts/bench-repl-failover.sh [ROUNDS (default 10)]
#
# Loopback only; each cluster is brought down on exit (repl_bench does).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
bin=./build/bin/repl_bench
[ -x "$bin" ] || { echo "build repl_bench first (scripts/build.sh)" >&2; exit 2; }
etcd=()
[ -x /usr/bin/etcd ] || etcd=(--skip-etcd)
echo "== default timing"
"$bin" --failover "$rounds" "${etcd[@]}"
echo "== faster profile: --heartbeat-ms 10 --detector phi --detector-timeout-ms 50"
"$bin" --failover "$rounds" --skip-etcd --up-args "--heartbeat-ms 10 --detector phi --detector-timeout-ms 50"
