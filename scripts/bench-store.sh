#!/usr/bin/env bash
# Commit throughput and latency of the store against one etcd member on the
# same disk, the serial (one fdatasync per commit) baseline and the raw
# fdatasync rate (tests/bench/store, docs/store.md). Installs Debian's
# etcd-server if it is missing (only this script and bench-failover.sh need it).
# Extra arguments go to store_bench, e.g. --seconds 5 --reps 5 --dir /data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-etcd.sh
build=${CONCLAVE_BUILD_DIR:-build}
if [ "$build" = build ]; then
  bash scripts/build.sh
else
  cmake --build "$build" -j "${CONCLAVE_JOBS:-2}" --target store_bench
fi
"$build/bin/store_bench" --etcd "$(command -v etcd)" "$@"
