// A randomized, deterministic simulation of a replica set running
// replica_core (protocols/replication), and the checkers that judge it.
//
// World: n replicas, each a host that executes its core's effects on a
// simulated disk (appended records are lost in a crash until a later fsync
// completes; the promised term, truncations and checkpoints are durable at
// once), and one event queue in virtual time for message deliveries (random
// delay, so reordering; loss and duplication while faults last; partitions),
// disk syncs, timers, client proposals and faults (crash, restart, pause,
// partition, checkpoint). A paused node (SIGSTOP) handles nothing until it
// resumes: deliveries, timers and sync completions wait for it. An oracle plays the
// election: it makes a random node of a connected majority primary with a higher term,
// and tells the old primary to step down now or never (it is then fenced by the term
// alone). After `faults_for` every fault heals and every node restarts; the run continues
// for `heal_for`.
//
// Checkers:
// - durability: every acknowledged strong commit is in the log (or the
//   checkpoint) of every primary that finishes a sync phase later, and of the
//   final primary;
// - agreement: replicas never apply different records at one lsn (their
//   committed prefixes never diverge), so a read of a secondary's applied state
//   never sees a record that is later lost (every applied record is checked
//   like an acknowledged one);
// - liveness: once faults heal, the primary serves, strong commits are
//   acknowledged, and every replica applies the primary's commit lsn.
//
// A seed fixes every choice: the same seed gives the same run.
#pragma once

#include "protocols/replication/replica_core.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace conclave::replication::sim {

struct sim_options {
  size_t replicas = 3;
  uint64_t seed = 1;
  /// Faults (crashes, partitions, loss, duplication, primary changes) happen
  /// in [0, faults_for); then everything heals and the run goes on for heal_for.
  duration faults_for = std::chrono::milliseconds(300);
  duration heal_for = std::chrono::milliseconds(300);
  double loss = 0.05;
  double dup = 0.03;
  /// While faults last, the oracle replaces a healthy primary with this
  /// probability at each of its checks (every 10-40 ms).
  double change_primary = 0.15;
  duration delay_min = std::chrono::microseconds(100);
  duration delay_max = std::chrono::milliseconds(3);
  /// The cores' settings; snapshots here are small, so they are retried soon.
  replica_config core = [] {
    replica_config c;
    c.snapshot_retry = std::chrono::milliseconds(60);
    return c;
  }();
  /// Meta-test: clients ask for weak commits but the checker counts their
  /// acknowledgements as strong ones ("ack before the majority is durable").
  bool weak_acks_counted_as_strong = false;
  /// Probability that a crash also loses the node's log and checkpoint (a
  /// damaged log moved aside): it restarts amnesiac, its promised term intact,
  /// and stays marked until its core says it is rebuilt.
  double amnesia = 0.0;
  /// Meta-test: such a node restarts with an empty log but is not marked
  /// amnesiac (the rule that keeps it out of sync majorities is off).
  bool amnesia_unmarked = false;
  /// Print every fault and role change.
  bool trace = false;
};

struct sim_result {
  uint64_t seed = 0;
  std::vector<std::string> violations;
  uint64_t acked = 0;
  uint64_t acked_after_heal = 0;
  uint64_t failed = 0;
  uint64_t primaries = 0;
  uint64_t syncs_finished = 0;
  uint64_t crashes = 0;
  uint64_t amnesias = 0;
  uint64_t snapshots = 0;
  uint64_t messages = 0;
  uint64_t events = 0;

  bool ok() const { return violations.empty(); }
  std::string summary() const;
};

sim_result run_schedule(const sim_options& opts);

} // namespace conclave::replication::sim
