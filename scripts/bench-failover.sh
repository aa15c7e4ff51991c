#!/usr/bin/env bash
# Leader failover time of conclave against etcd (tests/bench/failover): SIGKILL
# and SIGSTOP of the leader, >= 10 rounds each, conclave vs a 3-member etcd
# cluster at etcd's default timing and at heartbeat 10 ms / election 100 ms;
# medians, ratios, and idle node memory. Installs Debian's etcd-server if it is
# missing (only this script needs it). Extra arguments go to failover_bench,
# e.g. --rounds 20 or --nodes 5, or --idle-busy-s 600 to also count false
# suspicions in an idle 5-node cluster for 10 minutes while a spinning process
# per core (nice 19) keeps the cores busy, or --chaos-s 180 for 3 minutes of
# leaders and followers killed and stopped at random on 5 nodes (failover
# median, p90, p99 and p99 / median by signal). Loopback only; every process
# is stopped by pid.
set -euo pipefail
exec bash "$(dirname "$0")/etcd-bench.sh" failover_bench "conclave failover_bench" "$@"
