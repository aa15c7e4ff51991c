#!/usr/bin/env bash
# Fails when a source includes a layer above its own. The layers, lowest first:
#   protocols < storage < actors < runtime
# A layer may include itself and the layers below; none of them may include
# tests/ or examples/. Unit tests (x.test.cpp) sit next to the code they test
# and may also include tests/support/ and the simulated world, so they are not
# checked.
#
#   check_layers.sh [ROOT]   (default: the repository this script is in)
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/../.." && pwd)"}
cd "$root"
rank() {
  case $1 in
    protocols) echo 0 ;; storage) echo 1 ;; actors) echo 2 ;; runtime) echo 3 ;;
    tests | examples) echo 9 ;; *) echo -1 ;;
  esac
}
bad=0
checked=0
for layer in protocols storage actors runtime; do
  [ -d "$layer" ] || continue
  own=$(rank "$layer")
  while IFS= read -r -d '' file; do
    checked=$((checked + 1))
    while IFS=: read -r line target; do
      top=${target%%/*}
      r=$(rank "$top")
      if [ "$r" -gt "$own" ]; then
        echo "$file:$line: $layer/ includes $target (a layer above it)"
        bad=$((bad + 1))
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][a-z_]+/' "$file" |
             sed -E 's/^([0-9]+):[^<"]*[<"]([^>"]+)[>"].*/\1:\2/')
  done < <(find "$layer" \( -name '*.hpp' -o -name '*.cpp' \) ! -name '*.test.cpp' -print0)
done
if [ "$bad" -gt 0 ]; then
  echo "layers: $bad upward include(s) in $checked files (protocols < storage < actors < runtime)" >&2
  exit 1
fi
echo "layers: $checked files, no upward include"
