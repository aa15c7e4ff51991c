#!/usr/bin/env bash
# Configures and builds conclave into build/ (Release with debug info, -j2).
# Extra arguments go to cmake's configure step, e.g. -DCONCLAVE_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build -j "${CONCLAVE_JOBS:-2}"
