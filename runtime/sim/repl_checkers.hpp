// The checkers of the replication workload (`conclave sim --workload
// replication`; docs/design/simulation.md, "Replication workload"). Each is a
// separate piece that reads what a run recorded — every client write with its
// acknowledgement, and samples of every replica's applied state — and names
// what is wrong. None of them is part of the run; replica states or writes
// made up to break one property make its checker complain
// (repl_checkers.test.cpp).
//
// The workload writes one key per client, and a client writes its next value
// only once the previous one is acknowledged: the values of a key are its
// writes' sequence numbers, in the order the client issued them. A replica
// state "has" an acknowledged write when its value of the key is that write's
// number or a later one of the same key.
//
//   acked_commits_survive   (safety) every strong write acknowledged by a
//                           primary whose term was at most t is in the
//                           state of every primary serving in term t or
//                           later, sampled after the acknowledgement
//   acting_primary_reads    (safety) a read on the acting primary (its
//                           election candidate acts under the quorum guard
//                           and its replica serves) sees every strong write
//                           acknowledged before it, whoever acknowledged it
//   committed_prefix_agrees (safety) two replica states sampled at the same
//                           applied lsn are equal (replicas never diverge on
//                           their committed prefix)
//   commit_within_bound     (liveness) once faults heal, a strong write is
//                           acknowledged within the bound (a weak one when
//                           the run sends no strong writes)
//   replicas_converge       (liveness) at the end, after a quiet period, every
//                           replica has applied the same lsn and holds the
//                           same state
//   flow_control_holds      (safety) no primary ever had more bytes in flight
//                           to one secondary than its window plus one batch
//                           (at least one record)
#pragma once

#include "protocols/replication/types.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conclave::sim {

namespace repl = conclave::replication;

/// One client write as the run saw it.
struct repl_write {
  /// Sequence number of the write: unique in the run, increasing per key.
  uint64_t seq = 0;
  /// The key's index (client k writes key k).
  size_t key = 0;
  repl::commit_mode mode = repl::commit_mode::strong;
  repl::timestamp issued{0};
  /// When an attempt was acknowledged (ok), if ever.
  std::optional<repl::timestamp> acked;
  repl::node_id acked_by;
  /// The acknowledging replica's promised term, read right after the
  /// acknowledgement (never lower than the term the write committed in);
  /// unknown if the replica was down by then.
  std::optional<repl::term> acked_term;
  repl::lsn at;
};

/// One replica's state at one instant. Values are sequence numbers (0: the
/// key is absent).
struct repl_sample {
  repl::timestamp at{0};
  repl::node_id node;
  repl::role replica_role = repl::role::secondary;
  bool serving = false;
  /// Its election candidate was the acting leader at that instant.
  bool acting = false;
  repl::term promised;
  repl::lsn applied;
  /// Its log's last and durable record, and whether its storage failed.
  repl::lsn last;
  repl::lsn durable;
  bool failed = false;
  /// The most bytes the replica ever had in flight to one secondary while
  /// primary, in its current life.
  uint64_t peak_inflight = 0;
  /// The largest record it ever shipped in one append, in this life.
  uint64_t largest_record = 0;
  std::vector<uint64_t> values;
};

struct repl_observation {
  size_t keys = 0;
  std::vector<repl_write> writes;
  /// Samples in time order (several replicas per instant).
  std::vector<repl_sample> samples;
  /// The last sample of every live replica, after the quiet period.
  std::vector<repl_sample> final_states;
  /// Run time at which faults healed, and the time a commit then has.
  repl::timestamp heal{0};
  repl::duration bound{0};
  /// Liveness is judged only if a majority was up when faults healed (a
  /// crash without a restart never heals).
  bool judge_liveness = true;
  /// Flow control: the primaries' window and batch size, in bytes (window
  /// 0: not judged). A secondary may have the window plus one batch in
  /// flight, and a batch holds at least one record (so a record larger than
  /// the batch ships alone).
  uint64_t window_bytes = 0;
  uint64_t batch_bytes = 0;
};

struct repl_violation {
  std::string checker;
  std::string what;
  bool safety = true;
  /// The write this complaint is about (0: none): a lost commit.
  uint64_t lost_seq = 0;
};

class repl_checker {
public:
  virtual ~repl_checker() = default;
  virtual const char* name() const = 0;
  virtual bool safety() const { return true; }
  /// Appends one violation per problem found (checker and safety filled in
  /// by run_repl_checkers).
  virtual void check(const repl_observation& obs,
                     std::vector<repl_violation>& out) const = 0;
};

/// The name of the workload's key number `k` ("k1", "k2", ...).
std::string key_name(size_t k);

/// The six checkers above, in that order.
std::vector<std::unique_ptr<repl_checker>> standard_repl_checkers();

/// Runs every checker (repl_checker, lease_checker: name(), safety(),
/// check(obs, out)) on `obs`; at most `max_per_checker` complaints each, each
/// stamped with its checker's name and kind.
template <class Checker, class Observation>
std::vector<repl_violation>
run_checkers(const std::vector<std::unique_ptr<Checker>>& checkers,
             const Observation& obs, size_t max_per_checker) {
  std::vector<repl_violation> all;
  for (auto& c : checkers) {
    std::vector<repl_violation> found;
    c->check(obs, found);
    if (found.size() > max_per_checker)
      found.resize(max_per_checker);
    for (auto& v : found) {
      v.checker = c->name();
      v.safety = c->safety();
      all.push_back(std::move(v));
    }
  }
  return all;
}

/// Runs every checker on `obs`; at most `max_per_checker` complaints each.
std::vector<repl_violation>
run_repl_checkers(const std::vector<std::unique_ptr<repl_checker>>& checkers,
                  const repl_observation& obs, size_t max_per_checker = 20);

} // namespace conclave::sim
