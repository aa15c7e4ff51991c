#!/usr/bin/env bash
# Installs, from Debian's packages, everything conclave needs to build, test and
# benchmark. Safe to run again: it installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  ccache                # compiler cache: rebuilds after a clean or a branch switch are cheap
  libcaf-dev            # actors, middleman, test coordinator (0.17.6)
  libboost-dev          # Boost.Outcome: result<T> without exceptions
  prometheus-cpp-dev    # metrics exposer
  libcli11-dev          # command line: subcommands, env vars, config files
  nlohmann-json3-dev    # JSON output and reports
  libspdlog-dev         # node logs: ISO timestamps, levels, JSON lines
  googletest libgtest-dev libgmock-dev
  libbenchmark-dev
  gnuplot-nox           # plots of simulation runs
  prometheus            # server for the metrics integration test (tests/process)
  openssl               # `cluster up` makes a throwaway CA and node certificates
  iproute2              # `ip netns`: the deploy test's hosts are network namespaces (tests/process)
  libssl-dev            # identity proofs between nodes (X509/EVP), TLS handshake counters; its static libraries go into the `conclave` front
  libcpp-httplib-dev    # the node's HTTP/JSON API (--http); Debian builds it with OpenSSL
  libjemalloc-dev       # the benchmarks' allocator (CMakeLists.txt, CONCLAVE_BENCH_ALLOCATOR)
  valgrind              # helgrind: simulated worlds on several threads share no state (tests/cli)
  chromium chromium-driver # the status page tested in headless Chromium (tests/process/http_browser)
  etcd-server etcd-client # the lock scenario's reference (scripts/lock-scenario.sh: etcdctl lock);
                        # the package may start a service on 2379, which the scenario never uses
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
else
  echo "setup: all packages present" >&2
fi
