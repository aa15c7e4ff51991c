#!/usr/bin/env bash
# Runs a docs page as a user would: every ```sh block of the page, in order,
# in one shell. Blocks fenced otherwise (```bash: set-up and build, ```cpp:
# code shown, not written) are not run. Fails if any command fails; stops
# every cluster the page started on exit, whatever happened.
#
#   bash tests/docs/run_page.sh [--installed] BUILD_DIR PAGE [TIMEOUT_S]
#
# Without --installed the page runs with BUILD_DIR/bin first on PATH. With
# --installed, BUILD_DIR is first installed into a temporary prefix
# (`cmake --install`), and the page runs with PREFIX/bin first on PATH and
# CMAKE_PREFIX_PATH=PREFIX, so that its find_package(conclave) finds the
# installed package, as a user's project would. CXX,
# CMAKE_CXX_COMPILER_LAUNCHER, CXXFLAGS and LDFLAGS from the environment reach
# the page's cmake calls unchanged.
set -euo pipefail

usage="usage: run_page.sh [--installed] BUILD_DIR PAGE [TIMEOUT_S]"
installed=0
if [ "${1:-}" = --installed ]; then
  installed=1
  shift
fi
build=${1:?$usage}
page=${2:?$usage}
limit=${3:-240}
build=$(cd "$build" && pwd)
page=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
[ -x "$build/bin/conclave" ] || { echo "no $build/bin/conclave" >&2; exit 1; }
[ -f "$page" ] || { echo "no $page" >&2; exit 1; }

# The page makes its directories with mktemp under $TMPDIR: give it a private
# one, so that the cleanup finds every cluster the page started.
work=$(mktemp -d "${TMPDIR:-/tmp}/conclave-docs-test.XXXXXX")
conclave=$build/bin/conclave
cleanup() {
  local status=$?
  while IFS= read -r -d '' f; do
    "$conclave" cluster down --dir "$(dirname "$f")" >/dev/null 2>&1 || true
  done < <(find "$work" -name cluster.json -print0 2>/dev/null)
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# kv remembers the primary in a cache file: keep it in the work dir.
export CONCLAVE_KV_CACHE_DIR="$work/kv-cache"

bin=$build/bin
if [ "$installed" = 1 ]; then
  prefix=$work/prefix
  echo "installing $build into $prefix" >&2
  cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; exit 1; }
  [ -x "$prefix/bin/conclave" ] || { echo "no conclave in $prefix/bin" >&2; exit 1; }
  bin=$prefix/bin
  export CMAKE_PREFIX_PATH="$prefix"
fi

script="$work/page.sh"
{
  echo 'set -euo pipefail'
  echo 'set -x'
  awk '/^```/ { if (inside) { inside = 0; next } if ($0 == "```sh") { inside = 1; next } }
       inside { print }' "$page"
} >"$script"
blocks=$(grep -c '^```sh$' "$page" || true)
[ "$blocks" -gt 0 ] || { echo "no \`\`\`sh blocks in $page" >&2; exit 1; }
echo "running $blocks sh blocks of $page (limit ${limit} s)" >&2

mkdir "$work/home"
cd "$work/home"
TMPDIR="$work" PATH="$bin:$PATH" timeout --kill-after=10 "$limit" bash "$script"
echo "$(basename "$page"): every command of the page succeeded" >&2
