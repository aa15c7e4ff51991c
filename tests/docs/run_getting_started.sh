#!/usr/bin/env bash
# Runs docs/getting-started.md as a user would: every ```sh block of the page,
# in order, in one shell, with the build's bin dir first on PATH. Blocks fenced
# otherwise (```bash: set-up and build) are not run. Fails if any command
# fails; stops every cluster the page started on exit, whatever happened.
#
#   bash tests/docs/run_getting_started.sh BUILD_DIR [TIMEOUT_S]
set -euo pipefail

build=${1:?usage: run_getting_started.sh BUILD_DIR [TIMEOUT_S]}
limit=${2:-240}
build=$(cd "$build" && pwd)
page="$(cd "$(dirname "$0")/../.." && pwd)/docs/getting-started.md"
[ -x "$build/bin/conclave" ] || { echo "no $build/bin/conclave" >&2; exit 1; }
[ -f "$page" ] || { echo "no $page" >&2; exit 1; }

# The page makes its cluster dir with mktemp under $TMPDIR: give it a private
# one, so that the cleanup finds every cluster the page started.
work=$(mktemp -d "${TMPDIR:-/tmp}/conclave-docs-test.XXXXXX")
cleanup() {
  local status=$?
  while IFS= read -r -d '' f; do
    "$build/bin/conclave" cluster down --dir "$(dirname "$f")" >/dev/null 2>&1 || true
  done < <(find "$work" -name cluster.json -print0 2>/dev/null)
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# kv remembers the primary in a cache file: keep it in the work dir.
export CONCLAVE_KV_CACHE_DIR="$work/kv-cache"

script="$work/getting-started.sh"
{
  echo 'set -euo pipefail'
  echo 'set -x'
  awk '/^```/ { if (inside) { inside = 0; next } if ($0 == "```sh") { inside = 1; next } }
       inside { print }' "$page"
} >"$script"
blocks=$(grep -c '^```sh$' "$page" || true)
[ "$blocks" -gt 0 ] || { echo "no \`\`\`sh blocks in $page" >&2; exit 1; }
echo "running $blocks sh blocks of $page (limit ${limit} s)" >&2

cd "$work"
TMPDIR="$work" PATH="$build/bin:$PATH" timeout --kill-after=10 "$limit" bash "$script"
echo "docs.getting_started: every command of the page succeeded" >&2
