#!/usr/bin/env bash
# Strong kv puts through the node's HTTP API (PUT /v1/kv/KEY over HTTPS with
# keep-alive) side by side with the C++ client library and one-shot
# `conclave kv put` processes, against one 3-node `conclave cluster up` (TLS)
# on loopback, in one run: 32 clients each by default, a closed loop of S
# seconds per case, R rounds with the order rotating; prints puts/s and the
# p50/p99 latency per round and their medians. The cluster lives in a
# temporary directory and is brought down (by its pid files) at the end.
# Figures depend on the machine's load: compare only figures of one run.
#
#   scripts/bench-http.sh [--clients 32] [--seconds 3] [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
bench=./build/bin/http_bench
[ -x "$bench" ] || { echo "bench-http: no $bench (run scripts/build.sh)" >&2; exit 2; }
exec "$bench" "$@"
