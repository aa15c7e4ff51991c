#!/usr/bin/env bash
# Installs Debian's etcd-server if it is missing. Only the benchmarks that
# compare against etcd need it (bench-failover.sh, bench-store.sh).
set -euo pipefail
if ! dpkg-query -W -f='${Status}' etcd-server 2>/dev/null | grep -q "install ok installed"; then
  echo "install-etcd: installing etcd-server" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q --no-install-recommends etcd-server >&2
fi
