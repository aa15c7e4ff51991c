#!/usr/bin/env bash
# Lease timing on loopback: starts a 3-node `conclave cluster up` (TLS) in a
# temporary directory, runs build/bin/lease_bench against it (hand-over after
# a release, hand-over after kill -9 of the holder process, acquire/release
# pairs per second), brings the cluster down, and prints one table. Figures
# only, nothing asserted about time.
#   scripts/bench-lease.sh [--handovers 200] [--kills 15] [--kill-ttl-ms 1000]
#       [--seconds 5] [--no-etcd] [--no-build] [more lease_bench options]
# With etcd installed (Debian's etcd-server), the hand-over after release is
# also measured for a 3-member etcd (etcd's lock API), unless --no-etcd.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${CONCLAVE_BUILD_DIR:-build}
build=1 etcd=1 args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --no-etcd) etcd=0; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "$build" = 1 ]; then
  if [ -f "$build_dir/CMakeCache.txt" ]; then
    cmake --build "$build_dir" -j "${CONCLAVE_JOBS:-2}" --target conclave lease_bench >&2
  else
    bash scripts/build.sh >&2
  fi
fi
conclave="$build_dir/bin/conclave"
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-lease.XXXXXX")
down() {
  "$conclave" cluster down --dir "$dir/cluster" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap down EXIT
trap 'exit 130' INT TERM
"$conclave" cluster up --nodes 3 --dir "$dir/cluster" >&2
if [ "$etcd" = 1 ] && command -v etcd >/dev/null 2>&1; then
  args+=(--etcd "$(command -v etcd)")
fi
"$build_dir/bin/lease_bench" --dir "$dir/cluster" "${args[@]}"
