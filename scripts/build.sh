#!/usr/bin/env bash
# Configures and builds conclave into build/ (Release with debug info, -j2).
# Extra arguments go to cmake's configure step, e.g. -DCONCLAVE_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
launcher=()
# ccache (scripts/setup.sh installs it) makes rebuilds cheap: after a clean,
# a branch switch, or in another checkout of the same machine (paths under the
# checkout are hashed relative to it).
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build -j "${CONCLAVE_JOBS:-2}"
