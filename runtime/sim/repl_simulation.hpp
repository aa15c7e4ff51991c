// One run of the replication workload (`conclave sim --workload
// replication`): `replicas` real replica hosts (actors/replication) on
// simulated disks, each beside a real election candidate whose acting leader
// is the primary, and `clients` clients writing through the primary, all on
// the simulated world (world.hpp) in virtual time, under the
// election's fault language (fault_plan.hpp); then the checkers
// (repl_checkers.hpp) read what the run recorded.
//
// A node is what `conclave node` composes (node_composition.hpp): its
// candidate, replica host, replica front and the leadership wiring between
// them, with the world's network and the node's own drifting clock.
// Candidates run Bully with the quorum guard, so "acting" is a lease held
// from a majority. Its storage (world_node_disk.hpp) is by default a
// simulated data directory that every start opens with the node's own
// storage code: the file WAL without a writer thread (a sync completes
// `fsync` of virtual time after it is asked for), the term file, the promise
// record; recovery cuts a torn tail, moves a damaged log aside and rebuilds
// it from the peers, or refuses to start (the node then stays down, as a
// process that exits 1). `--disk memory` keeps records in a memory log
// device instead. Crashing a node kills its actors (a process crash: the
// page cache keeps what was written); a restart spawns them again on the
// same disk, with a higher candidate incarnation.
//
// Faults: crash@T:N, restart@T:N, crash-leader@T, restart-leader@T (the node
// whose candidate acts), pause@T1-T2:N (SIGSTOP: its actors and timers wait),
// partition, cut, elect, loss, dup, delay, drift, random, horizon and heal, as
// for the election workload; disk-stall@T1-T2:N (no sync completes);
// fsync-loss@T:N (files: the power goes while the node's next sync from T on
// is under way, losing, tearing or garbling what it wrote since the last
// one; the node is down until a restart; memory: a crash); bitflip@T:N
// (files: one synced bit of the node's log or checkpoints flips, found at its
// next start). With the files disk, random=N also draws power losses and
// bit flips (each followed by a crash and a restart).
//
// Clients: client k writes key k of a dictionary, one write at a time; write
// values are sequence numbers, increasing per key. A client sends its write
// to the acting primary (or the node a refusal names), retries after a
// refusal or after 200 ms without an answer, and thinks 1..10 ms between
// writes; a quarter of the writes (by default) are weak. Client requests go
// straight to the host (no network faults). Every 10 ms the run samples
// every live replica: status, whether its candidate acts, and a snapshot read
// of every key, all at one instant (a sample whose status changed between
// its first and last read is discarded). Clients stop at the first strong
// acknowledgement after faults heal and after `min_run` (or at heal + bound);
// after a quiet period of 500 ms every live replica is sampled once more.
//
// Determinism: one std::mt19937_64 seeded with the run's seed draws the
// random faults and the seeds of the network's and the clients' generators;
// everything runs on one test coordinator. Same settings, same report.
#pragma once

#include "actors/replication/lease_table.hpp"
#include "runtime/sim/disk_counts.hpp"
#include "runtime/sim/fault_plan.hpp"
#include "runtime/sim/lease_checkers.hpp"
#include "runtime/sim/repl_checkers.hpp"
#include "runtime/sim/world_node_disk.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace conclave::sim {

struct repl_settings {
  size_t replicas = 3;
  size_t clients = 4;
  /// The parsed spec; a run adds its own random faults to a copy.
  fault_plan plan;
  uint64_t seed = 1;
  /// Share of writes sent weak (acknowledged once durable on the primary).
  double weak_share = 0.25;
  /// Clients write at least this long, even without faults.
  duration min_run = std::chrono::milliseconds(500);
  /// Virtual time a disk sync takes.
  duration fsync = std::chrono::milliseconds(2);
  /// Each node's data directory as `conclave node` keeps it, opened by the
  /// node's own storage code at every start (files), or records in memory.
  disk_kind disk = disk_kind::files;
  /// Replica hosts checkpoint every this many records (0: never), so that a
  /// replica that was away catches up by a streamed checkpoint.
  uint64_t checkpoint_every = 0;
  /// Most bytes in one append, and in flight to one secondary (0: the
  /// node's defaults, replica_config).
  uint64_t batch_bytes = 0;
  uint64_t window_bytes = 0;
  /// Every host's lease timing.
  replication::lease_timing lease;
  /// Leases each replica sample reads instead of the clients' keys (its
  /// values are then digests of the leases as applied, 0: no holder).
  std::vector<std::string> sampled_leases;
  /// Each node's clock runs at rate 1 + r, r drawn in [-e, e] per node and run
  /// (the world's clock model); negative: the drift the candidates' quorum
  /// guard is configured to tolerate, as in the election workload.
  double clock_rate_error = -1;
  /// Clock rates chosen instead of drawn (index: replica; the lease workload
  /// draws an extreme rate two times in three).
  std::vector<double> clock_rates;
  /// Clients whose every operation goes into a history that the
  /// linearizability checker judges at the end of the run: puts, gets and
  /// removes of two shared keys, enqueues and dequeues of one queue.
  size_t history_clients = 2;
  // -- broken fixtures of the checkers' meta-tests --
  /// New primaries serve without a sync phase (replica_config::unsafe_skip_sync).
  bool skip_sync = false;
  /// Primaries ship past their flow-control window
  /// (replica_config::unsafe_ignore_window).
  bool ignore_window = false;
  /// Disks report syncs durable before they are (ack before durable).
  bool lying_disk = false;
  /// Installed checkpoints keep the old store state
  /// (replica_host_options::unsafe_install_keeps_state).
  bool bad_install = false;
  /// Replica fronts pass a primary's reads on without checking that their
  /// candidate acts (replica_front_options::unsafe_reads_without_lease).
  bool reads_without_lease = false;
  /// A node whose start moved a damaged log aside rejoins without the
  /// amnesia mark (files disk): its empty log counts in sync majorities.
  bool amnesia_unmarked = false;
};

/// What one run did and what the checkers found.
struct repl_run_report {
  uint64_t seed = 0;
  std::vector<repl_violation> violations;
  bool liveness_judged = true;
  uint64_t faults = 0;
  /// The run's faults, random ones drawn, in the spec's syntax.
  std::string fault_list;
  uint64_t writes = 0;       ///< writes issued
  uint64_t strong_acked = 0; ///< strong writes acknowledged
  uint64_t weak_acked = 0;
  /// Strong acknowledged writes some checker found missing (must be 0).
  uint64_t lost = 0;
  /// Sync phases finished (a primary started serving), and their durations.
  uint64_t syncs = 0;
  std::vector<duration> sync_durations;
  uint64_t samples = 0;
  uint64_t samples_discarded = 0;
  /// Samples taken on the acting, serving primary (the reads
  /// acting_primary_reads judges).
  uint64_t acting_reads = 0;
  /// Operations of the history clients judged by the linearizability
  /// checker, those without an answer, and the partitions (keys, queue) it
  /// could not decide within its step budget.
  uint64_t history_ops = 0;
  uint64_t history_unanswered = 0;
  uint64_t history_undecided = 0;
  uint64_t messages = 0;
  uint64_t messages_lost = 0;
  uint64_t duplicated = 0;
  /// Records appended but not yet durable that crashes dropped.
  uint64_t unsynced_lost = 0;
  /// Files disk: power losses, bit flips, and what the starts found.
  disk_counts disks;
  /// Checkpoints written and streamed checkpoints installed, all replicas.
  uint64_t checkpoints = 0;
  uint64_t installs = 0;
  /// From heal to the first strong acknowledgement after it (if any).
  std::optional<duration> recovery;
  timestamp heal{0};
  duration bound{0};
  timestamp end{0};
  /// Nodes down when the run ended (a crash no restart followed).
  uint64_t down_at_end = 0;

  /// Failovers: sync phases after the first.
  uint64_t failovers() const { return syncs > 0 ? syncs - 1 : 0; }
  bool safety_violated() const;
  bool liveness_failed() const;
};

/// How long a strong commit may take once faults heal: 3 s (detection, a
/// guarded election, the sync phase) + 20 x the longest message delay.
duration repl_bound(const fault_plan& plan);

/// Checks the plan's node numbers against `replicas`, and that a memory
/// disk gets no bit flips (it keeps records, not bytes).
outcome::result<void, std::string> validate_repl(const fault_plan& plan, size_t replicas,
                                                 disk_kind disk = disk_kind::files);

repl_run_report run_repl_simulation(const repl_settings& settings);

// -- the lease workload -----------------------------------------------------------
//
// `conclave sim --workload lease` runs the same world (replica hosts beside
// election candidates, the same fault language) with lease clients instead
// of writers. Each node's clock (which its candidate, replica host and
// front all read) runs at a rate drawn per run from [1 - drift, 1 + drift]
// (an extreme two times in three), and so does each client's clock: drift is
// the fault spec's drift= if it has one, else the drift the hosts' lease
// expiry allows for (lease_settings::drift). Client k loops: acquire lease "mutex" (or,
// with limit > 1, half of the time the semaphore "sem") with a wait of 2 ttl, hold it for
// 0..3 ttl (its own clock) while renewing every ttl / 3, release it, think
// 1..20 ms. Every request goes to the primary the client knows (a refusal's
// hint, else the last sampled acting primary, else the next replica) and is
// retried after not_primary or after a timeout (200 ms; an acquire: its wait
// + 200 ms), with the same holder id until the attempt ends. Clients are
// paused at random (frozen: they neither send nor read answers while their
// clock runs on) and resume with whatever they believed. What each client
// believed, and when, goes to the lease checkers (lease_checkers.hpp); the
// replicas' sampled lease tables go to committed_prefix_agrees and
// replicas_converge.

struct lease_settings {
  /// Replicas, faults, seed, fsync, checkpoints; `clients` = lease clients.
  repl_settings base;
  std::chrono::milliseconds ttl{300};
  /// Slots of the semaphore "sem" (1: only the mutex is used).
  uint32_t limit = 1;
  /// The bound on every clock's rate error that the hosts' lease expiry
  /// allows for (and the clocks' drift unless the plan sets drift=), and the
  /// hosts' lock delay.
  double drift = 0.01;
  duration lock_delay{0};
  /// Random client pauses per run: up to this many per client.
  size_t client_pauses = 2;
  /// Pauses the run makes besides the random ones: client (0-based), from, to.
  struct client_pause {
    size_t client = 0;
    duration from{0}, to{0};
  };
  std::vector<client_pause> planned_pauses;
  // -- broken fixture of the checkers' meta-test --
  /// Hosts expire holders after the bare ttl on their clock (drift 0, no
  /// lock delay) while clocks drift by up to 5%.
  bool unsafe_no_drift = false;
};

struct lease_run_report {
  uint64_t seed = 0;
  std::vector<repl_violation> violations;
  bool liveness_judged = true;
  uint64_t faults = 0;
  std::string fault_list;
  uint64_t acquires = 0; ///< acquire requests sent (retries included)
  uint64_t grants = 0;   ///< acquires answered ok
  uint64_t busy = 0;     ///< acquires answered lease_busy
  uint64_t renewals = 0; ///< renewals answered ok
  uint64_t releases = 0; ///< releases answered ok
  /// Renewals and releases answered stale_token: the slot had expired.
  uint64_t expiries = 0;
  uint64_t client_pauses = 0;
  /// The most clients that believed they held each lease at one instant.
  size_t max_mutex_believers = 0;
  size_t max_sem_believers = 0;
  uint64_t syncs = 0;
  uint64_t messages = 0;
  uint64_t messages_lost = 0;
  /// From heal to the first grant after it (if any).
  std::optional<duration> recovery;
  timestamp heal{0};
  duration bound{0};
  timestamp end{0};

  uint64_t failovers() const { return syncs > 0 ? syncs - 1 : 0; }
  bool safety_violated() const;
  bool liveness_failed() const;
};

/// How long after heal some client must be granted a lease: repl_bound (a
/// primary serves again) + 2 drift-widened ttls and the lock delay (a slot
/// whose holder went away expires, also after a takeover restarted it) + 3
/// ttl (a hold) + 2 ttl (an acquire's wait) + 3 ttl (a client's pause) + 1
/// ttl + a client's timeout.
duration lease_bound(const lease_settings& s);

lease_run_report run_lease_simulation(const lease_settings& settings);

} // namespace conclave::sim
