#!/usr/bin/env bash
# Wall time of one-shot `conclave kv put` and `kv get` processes against a
# 3-node TLS cluster on loopback: starts the cluster in a temporary
# directory, runs N sequential puts and N gets (each a new process, from exec
# to exit), prints median, p90 and p99 in milliseconds, the kv process's
# mean CPU time, the nodes' CPU time per operation, and brings the cluster
# down. On a busy machine the CPU figures move less than the wall times.
#
#   scripts/bench-kv-oneshot.sh [-n N] [--old BIN] [--compare] [--caf]
#                               [--trace] [--insecure] [--nodes K]
#
#   --old BIN  also start a cluster of BIN (another build of conclave, e.g.
#              one of the main branch) and pair every run with the same
#              operation by BIN against its own cluster, alternating which
#              goes first, so that both see the same machine load: the
#              before/after figures of a change, side by side in one run.
#   --compare  pair every run with one over `kv --dial-all` (every member
#              dialed at once, no primary hint: the path without the fast
#              start), against the same cluster.
#   --caf      pair every run with one over `kv --no-http` (the members'
#              cluster links: actor system, TLS, BASP, client hello), against
#              the same cluster; without it get and put of a TLS cluster go
#              over the members' HTTPS API.
#   --trace    run the new binary's kv with --trace-stages and print the
#              median time of each stage: exec to main (process start and
#              dynamic linking), main to parsed (the command line), parsed to
#              system (the actor system and OpenSSL's set-up), system to
#              ready (connect, TLS and BASP handshakes, client hello), ready
#              to answered (the operation's round trip), answered to exit,
#              exit to reaped (the kernel ending the process). Over HTTPS
#              (the front, bin/conclave) there is no system stage: parsed to
#              context is the TLS context, context to connected the connect,
#              connected to ready the handshake, ready to answered the
#              request.
#
# The primary cache and the TLS session files live in the temporary directory
# (--cache-dir), not in ~/.cache. Figures depend on the machine's load: run
# it on an idle machine, and compare only figures of one run. Every node is
# stopped by pid (`cluster down`, else the pid files).
set -euo pipefail
cd "$(dirname "$0")/.."
conclave=${CONCLAVE_BIN:-./build/bin/conclave}
runs=200
compare=0
caf=0
trace=0
old=
nodes=3
up_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --compare) compare=1; shift ;;
    --caf) caf=1; shift ;;
    --trace) trace=1; shift ;;
    --insecure) up_extra+=(--insecure); shift ;;
    --nodes) nodes=$2; shift 2 ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "bench-kv-oneshot: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$runs" in ''|*[!0-9]*|0) echo "bench-kv-oneshot: -n needs a positive integer" >&2; exit 2 ;; esac
[ -x "$conclave" ] || { echo "bench-kv-oneshot: no $conclave (run scripts/build.sh)" >&2; exit 2; }
[ -z "$old" ] || [ -x "$old" ] || { echo "bench-kv-oneshot: --old: no executable $old" >&2; exit 2; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-kv-oneshot: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/conclave-kv-oneshot.XXXXXX")
down() { # BIN DIR: stop the cluster in DIR, by its pid files if `down` fails
  if [ -d "$2" ] && ! "$1" cluster down --dir "$2" >/dev/null 2>&1; then
    for f in "$2"/node-*/node.pid; do
      [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
  fi
}
cleanup() {
  down "$conclave" "$tmp/new"
  [ -z "$old" ] || down "$old" "$tmp/old"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$conclave" cluster up --dir "$tmp/new" --nodes "$nodes" "${up_extra[@]}" >/dev/null
kv_new=("$conclave" kv --dir "$tmp/new" --cache-dir "$tmp/cache-new" --timeout-ms 5000)
kv_all=("${kv_new[@]}" --dial-all)
kv_caf=("${kv_new[@]}" --no-http)
kv_traced=("${kv_new[@]}")
[ "$trace" = 0 ] || kv_traced+=(--trace-stages)
# The first write also waits for the primary's sync phase; not measured.
"${kv_new[@]}" put warm-up 1 >/dev/null
if [ -n "$old" ]; then
  "$old" cluster up --dir "$tmp/old" --nodes "$nodes" "${up_extra[@]}" >/dev/null
  kv_old=("$old" kv --dir "$tmp/old" --cache-dir "$tmp/cache-old" --timeout-ms 5000)
  "${kv_old[@]}" put warm-up 1 >/dev/null
fi

# Sets cpu to the CPU time (user + system, ms) of every process this shell
# waited for so far (not in a $(...): that would be another shell's).
children_cpu() {
  times >"$tmp/times" # a builtin with a redirection runs in this shell
  cpu=$(awk 'NR == 2 {
    n = split($0, f, /[ms ]+/); t = 0
    for (i = 1; i + 1 <= n; i += 2) t += f[i] * 60000 + f[i + 1] * 1000
    printf "%.0f\n", t }' "$tmp/times")
}

# CPU time (ms) the nodes of the cluster in DIR used so far.
nodes_cpu() {
  local ticks=0 f
  for f in "$1"/node-*/node.pid; do
    ticks=$((ticks + $(awk '{ print $14 + $15 }' "/proc/$(cat "$f")/stat")))
  done
  echo $((ticks * 1000 / $(getconf CLK_TCK)))
}

# timed NAME CMD...: runs CMD once, appends its wall time (ms) to $tmp/NAME
# and its CPU time to $tmp/NAME.cpu; with --trace-stages in CMD, also each
# stage's time to $tmp/NAME.stages.
timed() {
  local name=$1
  shift
  children_cpu
  local c0=$cpu
  local t0=$EPOCHREALTIME
  "$@" >/dev/null 2>"$tmp/stderr" || {
    echo "bench-kv-oneshot: failed: $*" >&2
    cat "$tmp/stderr" >&2
    exit 1
  }
  local t1=$EPOCHREALTIME
  local us=$((10#${t1/./} - 10#${t0/./}))
  printf '%d.%03d\n' $((us / 1000)) $((us % 1000)) >>"$tmp/$name"
  children_cpu
  echo $((cpu - c0)) >>"$tmp/$name.cpu"
  if grep -q '^conclave-trace ' "$tmp/stderr"; then
    awk -v t0="${t0/./}" -v t1="${t1/./}" '
      $1 == "conclave-trace" { s[++n] = $2; t[n] = $3 }
      END {
        prev = "exec"; pt = t0
        for (i = 1; i <= n; ++i) { printf "%s>%s %.3f\n", prev, s[i], (t[i] - pt) / 1000; prev = s[i]; pt = t[i] }
        printf "%s>reaped %.3f\n", prev, (t1 - pt) / 1000
      }' "$tmp/stderr" >>"$tmp/$name.stages"
  fi
}

node_cpu_new=$(nodes_cpu "$tmp/new")
[ -z "$old" ] || node_cpu_old=$(nodes_cpu "$tmp/old")
for i in $(seq "$runs"); do
  for op in put get; do
    args=(put "bench-$i" "value-$i")
    [ "$op" = put ] || args=(get "bench-$i")
    if [ -n "$old" ] && [ $((i % 2)) = 0 ]; then
      timed "$op.old" "${kv_old[@]}" "${args[@]}"
      timed "$op.new" "${kv_traced[@]}" "${args[@]}"
    else
      timed "$op.new" "${kv_traced[@]}" "${args[@]}"
      [ -z "$old" ] || timed "$op.old" "${kv_old[@]}" "${args[@]}"
    fi
    [ "$compare" = 0 ] || timed "$op.all" "${kv_all[@]}" "${args[@]}"
    [ "$caf" = 0 ] || timed "$op.caf" "${kv_caf[@]}" "${args[@]}"
  done
done

node_cpu_new=$(($(nodes_cpu "$tmp/new") - node_cpu_new))
[ -z "$old" ] || node_cpu_old=$(($(nodes_cpu "$tmp/old") - node_cpu_old))

# median / p90 / p99 of a file of numbers (nearest rank).
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 }
    function rank(p) { r = int(p * NR + 0.999999); return v[r < 1 ? 1 : r] }
    END { printf "%8.2f %8.2f %8.2f %6d\n", rank(0.5), rank(0.9), rank(0.99), NR }'
}

echo "conclave kv, one process per operation, $nodes-node cluster on loopback" \
  "(${up_extra[*]:-TLS}), $runs runs each; wall ms from exec to exit"
printf '%-34s %8s %8s %8s %6s %8s\n' operation median p90 p99 runs "cpu"
cpu_mean() { awk '{ t += $1 } END { printf "%8.1f", t / NR }' "$1"; }
row() { printf '%-34s %s %s\n' "$1" "$(stats "$tmp/$2")" "$(cpu_mean "$tmp/$2.cpu")"; }
for op in put get; do
  row "$op" "$op.new"
  [ -z "$old" ] || row "$op (--old $(basename "$old"))" "$op.old"
  [ "$compare" = 0 ] || row "$op --dial-all" "$op.all"
  [ "$caf" = 0 ] || row "$op --no-http" "$op.caf"
done
echo "cpu: the kv process's user + system ms (mean; the kernel counts in 1 ms steps)"
ops=$((2 * runs * (compare + caf + 1)))
echo "node CPU per operation, idle heartbeats included: $((node_cpu_new / ops)) ms" \
  "${old:+(--old cluster: $((node_cpu_old / (2 * runs))) ms)}"
if [ "$trace" = 1 ]; then
  echo "stages of the new binary's runs (median ms of each step; the medians do not add up to the total's)"
  for op in put get; do
    [ -f "$tmp/$op.new.stages" ] || continue
    awk '{ print $1 }' "$tmp/$op.new.stages" | awk '!seen[$0]++' | while read -r step; do
      awk -v s="$step" '$1 == s { print $2 }' "$tmp/$op.new.stages" >"$tmp/step"
      printf '%-34s %s\n' "$op ${step/>/ → }" "$(stats "$tmp/step")"
    done
  done
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
