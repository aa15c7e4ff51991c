#!/usr/bin/env bash
# Replicated store throughput: a 3-node `conclave cluster up` (TLS) against a
# 3-member etcd, both on loopback, in one run: for 1, 8, 32 and 128 clients,
# strong puts of 256-byte values with distinct keys in a closed loop; prints
# commits/s, p50/p99 commit latency and the ratios conclave/etcd.
# Installs Debian's etcd-server if missing (scripts/etcd-bench.sh).
#
#   scripts/bench-repl.sh [--clients 1,8,32,128] [--seconds 5] [--skip-etcd]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/etcd-bench.sh repl_bench "conclave repl_bench" "$@"
