#!/usr/bin/env bash
# Sets up, builds and runs every test. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${CONCLAVE_JOBS:-2}" --timeout 600
