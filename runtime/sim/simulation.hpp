// One deterministic simulation run of an election algorithm.
//
// The real candidate actors run on the simulated world (runtime/sim/world.hpp:
// CAF's test coordinator, an event queue in true virtual time, a network with
// delay, loss, duplication and partitions, per-node clocks with rate error and
// offset, crashes, restarts and pauses), hosted by runtime/sim/election_host.hpp.
// Faults come from the fault plan; a seed fixes every random choice, so a run is
// replayed exactly by its seed.
//
// Checkers (runtime/sim/checkers.hpp) observe every event:
// - safety: never two candidates acting as leader in the same term; with the
//   quorum guard, never two acting at the same instant; a claim with a lower term
//   is never adopted; a leader task never runs past its leadership.
// - claimants: windows with two acting leaders (split brain, a finding without
//   the guard) and windows in which a deposed leader still claims leadership
//   after a majority adopted a higher term; every window's duration.
// - liveness, over time: from stable_from = last fault healed + liveness_bound()
//   to the end of the run, one agreed leader acts continuously and no election
//   starts; the fraction of time with an agreed acting leader.
// - needless leader changes: a candidate becoming leader in a term above that
//   of a healthy leader connected to a majority.
// - cost: messages per election by type (from the step that opens it, through
//   its last election message), latency, start-up vs failover.
#pragma once

#include "protocols/election/config.hpp"
#include "protocols/election/messages.hpp"
#include "runtime/sim/fault_plan.hpp"

#include <array>
#include <iosfwd>
#include <string>
#include <vector>

namespace conclave::sim {

struct sim_settings {
  election::election_config config;
  size_t nodes = 5;
  fault_plan plan;
  uint64_t seed = 1;
  /// How long after a crash its peers get "peer down" (a dropped connection is
  /// noticed within 1-2 ms of a kill -9 on loopback).
  duration down_notice = std::chrono::milliseconds(1);
  /// Record every leadership event (for the timeline plot).
  bool record_timeline = false;
  /// Stop as soon as the first agreement is reached (benchmarks).
  bool stop_at_first_agreement = false;
  /// Start with no automatic elections: only elect@ faults start them.
  bool quiet_start = false;
  /// Run a leader task on every candidate and check that it stops with the
  /// leadership.
  bool leader_tasks = true;
  /// Rate error bound of the candidates' clocks (each runs at 1 + r, |r| <= this);
  /// the plan's drift= replaces it. Negative: derived from the guard's drift
  /// bound, half of what it tolerates (max_clock_drift / (4 (lease + max_clock_drift))).
  double clock_rate_error = -1;
  /// The candidates' clocks start at offsets up to this.
  duration clock_offset_max = std::chrono::seconds(1);
  /// How long the run goes on after stable_from, to see that the leader stays.
  /// Zero: derived from the timeouts (stable_window()).
  duration stable_window{0};
  /// Print a message-level trace of the run here (runtime/sim/election_trace.hpp).
  std::ostream* trace = nullptr;
  /// With `trace`: heartbeats and their acks too.
  bool trace_heartbeats = false;
  /// UNSAFE (a planted defect for the checkers): with guard.death_proof, a
  /// pause delivers a proof of death as a crash does
  /// (election_host_options::unsafe_silence_proofs).
  bool unsafe_silence_proofs = false;
};

struct election_record {
  /// The first election of the run (no leader yet), as opposed to a failover.
  bool startup = false;
  duration latency{0};
  uint64_t messages = 0; ///< election-protocol messages (heartbeats excluded)
  std::array<uint64_t, election::message_type_count> by_type{};
};

struct timeline_entry {
  timestamp at;
  node_id node;
  std::string what;
  election::term t;
};

struct run_report {
  uint64_t seed = 0;
  election::algorithm algo = election::algorithm::bully;
  size_t nodes = 0;
  std::vector<election_record> elections;
  uint64_t safety_violations = 0;
  std::vector<std::string> violations; ///< the first few, readable
  uint64_t split_brain_windows = 0;
  duration split_brain_time{0};
  std::vector<duration> split_brain_durations; ///< every window
  /// Windows in which a deposed leader claimed leadership (is_leader, not
  /// frozen) while a majority had adopted a higher term.
  uint64_t stale_leader_windows = 0;
  std::vector<duration> stale_leader_durations;
  /// Leader tasks started (one per leadership that acted).
  uint64_t leader_task_starts = 0;
  /// Longest time a leader task ran after its candidate stopped acting.
  duration task_overrun_max{0};
  bool liveness_ok = true;
  duration time_to_agreement_after_heal{0};
  /// When the liveness judgement starts: last fault healed + liveness bound.
  timestamp stable_from{0};
  /// Elections started after stable_from (0 when live).
  uint64_t elections_after_stable = 0;
  /// Fraction of the run (and of the time after the faults healed) with an
  /// agreed, acting leader.
  double leader_time_fraction = 0;
  double leader_time_fraction_after_heal = 0;
  uint64_t leader_changes = 0;
  /// Candidates that became leader, in a term higher than another leader's that
  /// was alive, not frozen, leading (with the guard: acting) and connected to a
  /// majority of the group, itself included, by the network (partitions and
  /// cuts; loss and delay are not considered). Pre-vote keeps this at 0 under
  /// partitions.
  uint64_t needless_leader_changes = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_delivered = 0;
  uint64_t events = 0;
  timestamp end{0};
  std::vector<timeline_entry> timeline;
};

/// The time after the last fault heals within which all live candidates must
/// agree on one leader.
duration liveness_bound(const election::election_config& cfg, size_t nodes,
                        const fault_plan& plan);

/// How long a run goes on after stable_from to see that the leader stays.
duration stable_window(const election::election_config& cfg);

/// The bound within which a leader task must stop after its leadership ends.
duration task_stop_bound(const election::election_config& cfg);

/// Runs one simulation. The plan must have been validated for `nodes`; random
/// faults are drawn from the seed.
run_report run_simulation(const sim_settings& settings);

} // namespace conclave::sim
