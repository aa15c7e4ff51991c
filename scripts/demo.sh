#!/usr/bin/env bash
# Sets up, builds and runs the main job: a 5-node cluster on loopback elects a
# leader, the leader is killed (kill -9), the others elect a new one; the script
# shows both leaders and the failover time, then stops the cluster.
# Extra arguments go to `conclave cluster up` (e.g. --algorithm ring).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
conclave=./build/bin/conclave
dir=$(mktemp -d "${TMPDIR:-/tmp}/conclave-demo.XXXXXX")
trap '"$conclave" cluster down --dir "$dir" >/dev/null 2>&1 || true' EXIT

echo "== conclave cluster up --nodes 5 --dir $dir"
"$conclave" cluster up --nodes 5 --dir "$dir" "$@"
echo
echo "== kill -9 of the leader: conclave cluster kill --leader --signal KILL --wait"
"$conclave" cluster kill --dir "$dir" --leader --signal KILL --wait
echo
echo "== conclave cluster status"
"$conclave" cluster status --dir "$dir"
echo
echo "== conclave cluster down"
"$conclave" cluster down --dir "$dir"
trap - EXIT
