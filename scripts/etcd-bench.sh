#!/usr/bin/env bash
# Shared by the benchmarks that compare against etcd (bench-failover.sh,
# bench-store.sh): set up (scripts/setup.sh installs Debian's etcd-server too;
# the check below stays for machines set up before it did), build, then run
# PROGRAM --etcd PATH ARGS...
#   etcd-bench.sh PROGRAM "CMAKE TARGETS" [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
program=$1
targets=$2
shift 2
bash scripts/setup.sh
if ! dpkg-query -W -f='${Status}' etcd-server 2>/dev/null | grep -q "install ok installed"; then
  echo "etcd-bench: installing etcd-server" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q --no-install-recommends etcd-server >&2
fi
build=${CONCLAVE_BUILD_DIR:-build}
if [ "$build" = build ]; then
  bash scripts/build.sh
else
  # shellcheck disable=SC2086
  cmake --build "$build" -j "${CONCLAVE_JOBS:-2}" --target $targets
fi
"$build/bin/$program" --etcd "$(command -v etcd)" "$@"
