#!/usr/bin/env bash
# Sets up, builds and runs the main job: the in-process election demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/bin/election_demo "$@"
