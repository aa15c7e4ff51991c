#!/usr/bin/env bash
# The lock scenario: does the command a distributed lock runs stop before the
# lock goes to someone else, when the lock client is killed or stopped and
# cluster members fail? Measured from outside, the same way for both systems:
#
#   scripts/lock-scenario.sh --system etcd|conclave [--duration S] [--clients N]
#       [--seed S] [--ttl S] [--grace S] [--work-ms MIN-MAX]
#       [--faults client-kill,client-stop,member-kill,member-stop]
#       [--bin-dir DIR] [--harness-only] [--keep]
#
# It starts a 3-member cluster on loopback (etcd: three `etcd` processes on
# free ports, data in a temporary directory; conclave: `conclave cluster up
# --nodes 3`), then N lock loops, each running again and again
#   etcdctl lock --ttl TTL NAME  lock_probe_child ...            (etcd)
#   conclave lock NAME --dir D --ttl TTLs [--grace G] -- lock_probe_child ...
# The probe (tests/lock_scenario/lock_probe_child.cpp) appends start/alive/end
# lines with its fencing token (ETCD_LOCK_REV / CONCLAVE_LOCK_TOKEN) and
# CLOCK_MONOTONIC to one file. Meanwhile a fault loop, from an RNG seeded with
# --seed, every 1-4 s does one of:
#   client-kill   kill -9 the lock client (etcdctl / conclave lock) of the
#                 current holder: the last `start` line without an `end` names
#                 the loop (LABEL) and the client's pid (PPID)
#   client-stop   SIGSTOP that client for TTL+1..TTL+4 s, then SIGCONT
#   member-kill   kill -9 the leader member (etcd: `endpoint status`; conclave:
#                 `cluster status --json`), restart it 1-3 s later
#   member-stop   SIGSTOP the leader member for 1-4 s, then SIGCONT
# After --duration seconds everything is stopped and lock_history_check
# judges the file: overlapping holders, tokens not growing with the start
# order, a smaller token running after a larger one started.
#
# Prints the checker's report and one line
#   result SYSTEM holders=.. violations=.. overlap=.. order=.. stale=..
#          max_overlap_ms=.. faults=client-kill:..,client-stop:..,...
#          overlaps_after=client-kill:..,...,none:..
# (overlaps_after: the overlaps counted by the fault they followed: a client
# fault on the earlier holder, else the last fault in the 15 s before the later
# holder's start; see tests/lock_scenario/fault_log.hpp).
# Exit status: 0 no violation; 1 violations; 2 the harness failed (cluster did
# not start, no holder, malformed lines, hard timeout); 77 the system is not
# available (no etcd/etcdctl installed, or this conclave has no `lock`).
# With --harness-only, violations exit 0 too (what the CTest checks).
# Everything it starts is stopped by pid on exit; the temporary directory is
# removed unless --keep. A hard timeout (duration + 90 s) bounds the run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

system="" duration=60 clients=3 seed=1 ttl=2 grace="" work_ms="500-5000"
faults="client-kill,client-stop,member-kill,member-stop"
bin_dir="$root/build/bin" harness_only=0 keep=0
usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --system) system=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --ttl) ttl=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    --work-ms) work_ms=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --harness-only) harness_only=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "lock-scenario: unknown argument $1" >&2; usage ;;
  esac
done
case "$system" in etcd|conclave) ;; *) echo "lock-scenario: --system etcd|conclave" >&2; exit 2 ;; esac
for v in duration clients seed ttl; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "lock-scenario: --$v: expected a whole number" >&2; exit 2; }
done
[ "$clients" -ge 2 ] || { echo "lock-scenario: --clients: at least 2" >&2; exit 2; }
[[ $work_ms =~ ^([0-9]+)-([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ] \
  || { echo "lock-scenario: --work-ms MIN-MAX" >&2; exit 2; }
work_min=${BASH_REMATCH[1]} work_max=${BASH_REMATCH[2]}
IFS=, read -r -a fault_kinds <<<"$faults"
for f in "${fault_kinds[@]}"; do
  case "$f" in client-kill|client-stop|member-kill|member-stop|none) ;;
    *) echo "lock-scenario: unknown fault $f" >&2; exit 2 ;; esac
done

probe="$bin_dir/lock_probe_child"
checker="$bin_dir/lock_history_check"
conclave="$bin_dir/conclave"
for b in "$probe" "$checker"; do
  [ -x "$b" ] || { echo "lock-scenario: $b not built (cmake --build build --target $(basename "$b"))" >&2; exit 2; }
done
if [ "$system" = etcd ]; then
  if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
    echo "lock-scenario: etcd not available (Debian's etcd-server and etcd-client; scripts/setup.sh installs them)" >&2
    exit 77
  fi
  export ETCDCTL_API=3
else
  [ -x "$conclave" ] || { echo "lock-scenario: $conclave not built" >&2; exit 2; }
  if ! "$conclave" lock --help >/dev/null 2>&1; then
    echo "lock-scenario: conclave lock not available (this build of conclave has no \`lock\` command)" >&2
    exit 77
  fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lock-scenario-$system.XXXXXX")
history="$tmp/history"
: >"$history"
faults_log="$tmp/faults.log"
: >"$faults_log"
cluster_up=0

log() { echo "lock-scenario[$system]: $*" >&2; }
# kill_ours SIG PID NAME: signals PID only if it is still the program we started
# (its command line names NAME), so a reused pid is never hit.
kill_ours() {
  local sig=$1 pid=$2 name=$3
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name" || return 1
  kill "-$sig" "$pid" 2>/dev/null
}

stop_everything() {
  # Loops first (no new clients), then clients, then the probes they started
  # (an etcdctl killed by -9 leaves its probe running), then the cluster.
  local p
  for p in $(cat "$tmp/loop-pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  for p in $(cat "$tmp/clients" 2>/dev/null); do
    kill_ours KILL "$p" etcdctl || kill_ours KILL "$p" conclave
  done
  for p in $(awk '{print $5}' "$history" 2>/dev/null | sort -u); do
    kill_ours KILL "$p" lock_probe_child
  done
  for p in $(cat "$tmp/loop-pids" 2>/dev/null); do
    while kill -0 "$p" 2>/dev/null; do ms_sleep 10; done
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "${watchdog:-}" ] && kill "$watchdog" 2>/dev/null
  [ -n "${run_sleep:-}" ] && kill "$run_sleep" 2>/dev/null
  stop_everything
  if [ "$system" = etcd ]; then
    for p in $(cat "$tmp/members" 2>/dev/null); do kill_ours KILL "$p" etcd; done
  elif [ "$cluster_up" = 1 ]; then
    "$conclave" cluster down --dir "$tmp/cluster" >/dev/null 2>&1
  fi
  if [ "$keep" = 1 ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 2' INT
trap 'log "hard timeout or SIGTERM: stopping"; exit 2' TERM
# Sleeps are `read -t` on a fifo nobody writes: a builtin, so killing a loop
# leaves no sleep process behind.
mkfifo "$tmp/idle"
exec 9<>"$tmp/idle"
ms_sleep() { read -r -t "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))" -u 9 _; }
hard=$((duration + 90))
( read -r -t "$hard" -u 9 _; kill -TERM $$ ) 2>/dev/null &
watchdog=$!

# ---------------------------------------------------------------- the cluster --
# A port below the kernel's ephemeral range: a member restarted after kill -9
# must get its ports back, and an outgoing connection (a client's, a peer's)
# can take any free port of that range in between ("address already in use").
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral_low=32768
port_low=10000
[ "$ephemeral_low" -gt $((port_low + 2000)) ] || port_low=1100
free_port() {
  local p
  while :; do
    p=$((port_low + RANDOM % (ephemeral_low - port_low)))
    grep -qx "$p" "$tmp/ports" 2>/dev/null && continue
    if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
      echo "$p" >>"$tmp/ports"
      echo "$p"
      return
    fi
  done
}

etcd_start_member() { # index
  local i=$1
  etcd --name "m$i" --data-dir "$tmp/etcd/m$i" \
    --listen-client-urls "http://127.0.0.1:${client_port[$i]}" \
    --advertise-client-urls "http://127.0.0.1:${client_port[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${peer_port[$i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${peer_port[$i]}" \
    --initial-cluster "$etcd_initial" --initial-cluster-state new \
    --initial-cluster-token "lock-scenario-$$" \
    --logger zap --log-level error >>"$tmp/etcd/m$i.log" 2>&1 &
  echo $! >"$tmp/member-$i.pid"
  echo $! >>"$tmp/members"
  disown $! # stopped by pid in cleanup; no "Killed" notice
}

# etcd_restart_member: starts it again and checks that it stays up (a member
# that cannot start would leave the cluster without a quorum after the next
# fault, and the scenario would measure nothing).
etcd_restart_member() {
  local i=$1 try
  for try in 1 2 3; do
    etcd_start_member "$i"
    ms_sleep 500
    kill -0 "$(member_pid "$i")" 2>/dev/null && return 0
    log "etcd m$i did not stay up (try $try): $(tail -n 1 "$tmp/etcd/m$i.log" | cut -c1-200)"
  done
  return 1
}

# etcd_leader: prints the index of the member that says it leads.
etcd_leader() {
  local i
  for i in 1 2 3; do
    etcdctl --endpoints="127.0.0.1:${client_port[$i]}" --dial-timeout=1s \
      --command-timeout=1s endpoint status -w simple 2>/dev/null \
      | awk -F', ' '$5 == "true" {found=1} END {exit !found}' && { echo "$i"; return 0; }
  done
  return 1
}

conclave_leader() {
  "$conclave" cluster status --dir "$tmp/cluster" --json 2>/dev/null \
    | tr -d ' \n' | grep -o '"leader":[0-9]*' | head -n 1 | cut -d: -f2 | grep .
}

start_cluster() {
  if [ "$system" = etcd ]; then
    mkdir -p "$tmp/etcd"
    local i
    etcd_initial="" endpoints=""
    for i in 1 2 3; do
      client_port[$i]=$(free_port)
      peer_port[$i]=$(free_port)
      etcd_initial+="${etcd_initial:+,}m$i=http://127.0.0.1:${peer_port[$i]}"
      endpoints+="${endpoints:+,}127.0.0.1:${client_port[$i]}"
    done
    for i in 1 2 3; do etcd_start_member "$i"; done
    local deadline=$((SECONDS + 30))
    until etcdctl --endpoints="$endpoints" --dial-timeout=1s --command-timeout=2s \
      endpoint health >/dev/null 2>&1 && etcd_leader >/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || { log "etcd did not become healthy (logs in $tmp/etcd)"; keep=1; return 1; }
      sleep 0.2
    done
    log "etcd up: $endpoints"
  else
    "$conclave" cluster up --nodes 3 --dir "$tmp/cluster" >"$tmp/cluster-up.log" 2>&1 \
      || { log "conclave cluster up failed:"; cat "$tmp/cluster-up.log" >&2; cluster_up=1; return 1; }
    cluster_up=1
    log "conclave cluster up in $tmp/cluster"
  fi
}

# ------------------------------------------------------------------ lock loops --
lock_name="lock-scenario"
run_lock_client() { # label, work ms; becomes the lock client (exec)
  local label=$1 ms=$2
  local cmd=("$probe" --out "$history" --duration-ms "$ms" --label "$label")
  if [ "$system" = etcd ]; then
    # `--`: etcdctl would take the probe's options as its own
    exec etcdctl --endpoints="$endpoints" lock --ttl "$ttl" "$lock_name" \
      -- "${cmd[@]}" --token-env ETCD_LOCK_REV
  else
    # conclave's default grace (2 s) is for its default ttl (10 s): with a
    # short ttl the grace must leave time to renew (ttl = renew deadline +
    # grace + margin), so default to a quarter of the ttl here.
    local g=(--grace "$(awk -v t="$ttl" 'BEGIN { print t / 4 }')s")
    [ -n "$grace" ] && g=(--grace "${grace}s")
    exec "$conclave" lock "$lock_name" --dir "$tmp/cluster" --ttl "${ttl}s" "${g[@]}" \
      -- "${cmd[@]}" --token-env CONCLAVE_LOCK_TOKEN
  fi
}

lock_loop() { # label
  local label=$1 c
  RANDOM=$((seed * 1000 + label))
  while :; do
    local ms=$((work_min + (RANDOM * 32768 + RANDOM) % (work_max - work_min + 1)))
    ( run_lock_client "$label" "$ms" ) >>"$tmp/client-$label.log" 2>&1 9>&- &
    c=$!
    echo "$c" >"$tmp/client-$label.pid"
    echo "$c" >>"$tmp/clients"
    wait "$c"
    ms_sleep $((RANDOM % 100))
  done
}

# ------------------------------------------------------------------ the faults --
# holder_client: the pid of the lock client whose probe holds the lock now.
holder_client() {
  local kind token t label pid ppid c
  read -r kind token t label pid ppid < <(grep '^start ' "$history" | tail -n 1) || return 1
  [ -n "${token:-}" ] || return 1
  grep -q "^end $token " "$history" && return 1 # between holders
  c=$(cat "$tmp/client-$label.pid" 2>/dev/null) || return 1
  # etcdctl starts the probe itself (ppid = client); a client that runs it
  # through another process is still the loop's current client.
  if [ "$ppid" != "$c" ] && grep -qx "$ppid" "$tmp/clients"; then c=$ppid; fi
  kill -0 "$c" 2>/dev/null || return 1
  echo "$c $token"
}

# One line per fault, stamped with the probes' clock (CLOCK_MONOTONIC ns):
# the checker counts the overlaps by the fault they followed.
fault_note() { echo "$("$probe" --print-clock) $*" >>"$faults_log"; log "fault: $*"; }
member_pid() { cat "$tmp/member-$1.pid"; }

do_fault() {
  local kind=$1 h m
  case "$kind" in
    client-kill)
      h=$(holder_client) || { log "client-kill: no holder right now"; return 1; }
      kill -KILL "${h% *}" 2>/dev/null && fault_note "client-kill pid ${h% *} token ${h#* }" ;;
    client-stop)
      h=$(holder_client) || { log "client-stop: no holder right now"; return 1; }
      local s=$(( (ttl + 1) * 1000 + RANDOM % 3001 ))
      kill -STOP "${h% *}" 2>/dev/null || return 1
      fault_note "client-stop pid ${h% *} token ${h#* } for ${s} ms"
      ms_sleep "$s"
      kill -CONT "${h% *}" 2>/dev/null ;;
    member-kill)
      local down=$((1000 + RANDOM % 2001))
      if [ "$system" = etcd ]; then
        m=$(etcd_leader) || m=$((1 + RANDOM % 3))
        kill -KILL "$(member_pid "$m")" 2>/dev/null || return 1
        fault_note "member-kill etcd m$m, restart after ${down} ms"
        ms_sleep "$down"
        etcd_restart_member "$m"
      else
        m=$(conclave_leader) || m=$((1 + RANDOM % 3))
        "$conclave" cluster kill --dir "$tmp/cluster" --node "$m" --signal KILL >/dev/null 2>&1 || return 1
        fault_note "member-kill conclave node $m, restart after ${down} ms"
        ms_sleep "$down"
        "$conclave" cluster restart --dir "$tmp/cluster" --node "$m" >>"$tmp/restart.log" 2>&1 \
          || log "cluster restart --node $m failed (see $tmp/restart.log)"
      fi ;;
    member-stop)
      local s=$((1000 + RANDOM % 3001))
      if [ "$system" = etcd ]; then
        m=$(etcd_leader) || m=$((1 + RANDOM % 3))
        kill -STOP "$(member_pid "$m")" 2>/dev/null || return 1
        fault_note "member-stop etcd m$m for ${s} ms"
        ms_sleep "$s"
        kill -CONT "$(member_pid "$m")" 2>/dev/null
      else
        m=$(conclave_leader) || m=$((1 + RANDOM % 3))
        "$conclave" cluster kill --dir "$tmp/cluster" --node "$m" --signal STOP >/dev/null 2>&1 || return 1
        fault_note "member-stop conclave node $m for ${s} ms"
        ms_sleep "$s"
        "$conclave" cluster kill --dir "$tmp/cluster" --node "$m" --signal CONT >/dev/null 2>&1
      fi ;;
    none) return 1 ;;
  esac
}

fault_loop() {
  RANDOM=$seed
  while :; do
    ms_sleep $((1000 + RANDOM % 3001))
    do_fault "${fault_kinds[RANDOM % ${#fault_kinds[@]}]}"
  done
}

# ------------------------------------------------------------------------- run --
start_cluster || exit 2
: >"$tmp/loop-pids" ; : >"$tmp/clients"
for ((i = 0; i < clients; i++)); do
  lock_loop "$i" 2>>"$tmp/loop-$i.log" & # (bash's "Killed" notices of its clients)
  echo $! >>"$tmp/loop-pids"
  disown $!
done
fault_loop &
fault_pid=$!
echo "$fault_pid" >>"$tmp/loop-pids"
disown "$fault_pid"
log "running $clients lock loops for ${duration} s (seed $seed, ttl ${ttl} s, work ${work_ms} ms, faults $faults)"
sleep "$duration" &
run_sleep=$!
wait "$run_sleep"
# The fault loop may be in the middle of a stop: end it, then resume anything
# it stopped, so nothing is left frozen.
kill -KILL "$fault_pid" 2>/dev/null
while kill -0 "$fault_pid" 2>/dev/null; do ms_sleep 10; done
for p in $(cat "$tmp/clients"); do
  kill_ours CONT "$p" etcdctl || kill_ours CONT "$p" conclave
done
for p in $(cat "$tmp/members" 2>/dev/null); do kill_ours CONT "$p" etcd; done
[ "$system" = conclave ] && for n in 1 2 3; do
  "$conclave" cluster kill --dir "$tmp/cluster" --node "$n" --signal CONT >/dev/null 2>&1
done
stop_everything

echo "== lock_history_check ($system, seed $seed, ${duration} s, $clients clients)"
"$checker" "$history" --min-holders 1 --faults "$faults_log" | tee "$tmp/report"
check_rc=${PIPESTATUS[0]}
summary=$(grep '^summary ' "$tmp/report" | sed 's/^summary //')
counts=""
for f in client-kill client-stop member-kill member-stop; do
  counts+="${counts:+,}$f:$(grep -c " $f " "$faults_log")"
done
by_fault=$(grep '^overlaps_by_fault ' "$tmp/report" | cut -d' ' -f2- | tr ' =' ',:')
echo "result $system $summary faults=$counts overlaps_after=${by_fault:--}"
if [ "$check_rc" = 2 ]; then
  keep=1
  log "harness failure: the checker found no holder or malformed lines"
  exit 2
fi
[ "$harness_only" = 1 ] && exit 0
exit "$check_rc"
