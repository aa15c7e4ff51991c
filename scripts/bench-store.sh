#!/usr/bin/env bash
# Commit throughput and latency of the store against one etcd member on the
# same disk, the serial (one fdatasync per commit) baseline and the raw
# fdatasync rate (tests/bench/store, docs/design/store.md). Installs Debian's
# etcd-server if it is missing (scripts/etcd-bench.sh).
# Extra arguments go to store_bench, e.g. --seconds 5 --reps 5 --dir /data.
set -euo pipefail
exec bash "$(dirname "$0")/etcd-bench.sh" store_bench "store_bench" "$@"
