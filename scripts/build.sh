#!/usr/bin/env bash
# Configures and builds conclave into build/ (Release with debug info, -j2).
# Extra arguments go to cmake's configure step, e.g. -DCONCLAVE_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
launcher=()
# ccache, when the machine has it, makes rebuilds of other checkouts cheap.
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build -j "${CONCLAVE_JOBS:-2}"
