// One deterministic simulation run of an election algorithm.
//
// The real candidate actors run on CAF's test coordinator (one actor system per
// run). Beside CAF's scheduler, the simulation keeps its own event queue in
// virtual time: message deliveries (with delay, loss, duplication, partitions),
// timer firings, "peer down/up" notices and faults. Each event is handed to its
// actor as a CAF message and the coordinator runs that one job; the actor's sends
// and timers come back into the queue through the simulated transport and clock.
// A seed fixes every random choice, so a run is replayed exactly by its seed.
//
// Checkers watch every event:
// - safety: never two candidates acting as leader in the same term; with the
//   quorum guard, never two acting at the same instant; a claim with a lower term
//   is never adopted. Without the guard, overlapping acting leaders are counted as
//   split-brain windows (a finding, not a failure).
// - liveness: after the last fault heals, one leader known to all live candidates
//   within a bound derived from the timeouts (liveness_bound()).
// - cost: messages per election by type, latency from suspicion to agreement,
//   number of elections and leadership changes.
#pragma once

#include "protocols/election/config.hpp"
#include "protocols/election/messages.hpp"
#include "runtime/sim/fault_plan.hpp"

#include <array>
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
};

struct election_record {
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
  bool liveness_ok = true;
  duration time_to_agreement_after_heal{0};
  uint64_t leader_changes = 0;
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

/// Runs one simulation. The plan must have been validated for `nodes`; random
/// faults are drawn from the seed.
run_report run_simulation(const sim_settings& settings);

} // namespace conclave::sim
