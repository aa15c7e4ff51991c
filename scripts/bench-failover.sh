#!/usr/bin/env bash
# Leader failover time of conclave against etcd (tests/bench/failover): SIGKILL
# and SIGSTOP of the leader, >= 10 rounds each, conclave vs a 3-member etcd
# cluster at etcd's default timing and at heartbeat 10 ms / election 100 ms;
# medians, ratios, and idle node memory. Installs Debian's etcd-server if it is
# missing (only this script needs it). Extra arguments go to failover_bench,
# e.g. --rounds 20 or --nodes 5. Loopback only; every process is stopped by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-etcd.sh
build=${CONCLAVE_BUILD_DIR:-build}
if [ "$build" = build ]; then
  bash scripts/build.sh
else
  cmake --build "$build" -j "${CONCLAVE_JOBS:-2}" --target conclave failover_bench
fi
"$build/bin/failover_bench" --etcd "$(command -v etcd)" "$@"
