// check_linearizable: whether a client history (history.hpp) could have come
// from a store whose every operation took effect atomically at one instant
// between its invocation and its response (Herlihy & Wing's linearizability).
//
// Model. Each dictionary key is a register holding a value or nothing; each
// queue is a FIFO sequence. The operations of one key (or one queue) touch
// nothing else, so the history is checked partition by partition: a history is
// linearizable exactly when every partition is (linearizability is local).
// An operation without a response may take effect at any time after its
// invocation, with whatever result, or never.
//
// Search. Per partition, Wing & Gong's search over the operations that may go
// next (those invoked before the earliest pending response), with Lowe's
// improvement: a set of visited (linearized operations, state) configurations,
// so a configuration reached by two orders is explored once. The search
// counts steps (one step: one attempt to linearize one operation next); a
// partition that needs more than `step_budget` steps ends as `unknown`, never
// as linearizable.
//
// Witness. For a violating partition the report gives the longest
// linearization the search found and the operation that could not follow it,
// and a smaller witness: the history cut at the earliest response time at
// which it is already not linearizable (ops invoked later are dropped, ops
// answered later become unanswered), then, one at a time, every answered
// operation turned into an unanswered one while the rest still cannot be
// linearized. Both transformations only allow more behaviours, so the
// witness's operations, with their observed results, cannot be linearized
// even if every other operation of the cut took effect at any time or never.
#pragma once

#include "protocols/history/history.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conclave::history {

enum class verdict : uint8_t {
  linearizable,
  violation,
  /// The step budget ran out before the search decided.
  unknown,
};

const char* to_string(verdict v);

/// A key or a queue: the unit the checker searches independently.
struct partition {
  bool queue = false;
  std::string name;

  /// `key "k"` or `queue "q"`.
  std::string describe() const;
};

struct check_options {
  /// Steps the search of one partition may take before it gives up (unknown).
  uint64_t step_budget = 10'000'000;
  /// Steps, per violating partition, spent making the witness smaller (each
  /// try at most max(10,000, 20 x the steps of the search that found it)).
  uint64_t witness_budget = 1'000'000;
};

/// The verdict of one partition.
struct partition_report {
  partition where;
  verdict result = verdict::linearizable;
  /// Operations of the partition (indices into the history), in history order.
  std::vector<client_history::op_index> ops;
  /// Steps the search took.
  uint64_t steps = 0;

  // -- violation only --

  /// The longest order of operations the search could linearize, first to last.
  std::vector<client_history::op_index> longest_linearization;
  /// An answered operation that could not be linearized after it (none when
  /// the search gave up).
  std::optional<client_history::op_index> stuck;
  /// Answered operations that cannot be linearized together, given their
  /// observed results, even if every other operation invoked by `cut` took
  /// effect at any time after its invocation or never. Sorted by invocation.
  std::vector<client_history::op_index> witness;
  /// The response time at which the partition's history first stops being
  /// linearizable.
  timestamp cut{0};
  /// Operations invoked by `cut` other than the witness's.
  size_t others_by_cut = 0;

  /// One paragraph: verdict, partition, and for a violation the witness.
  std::string describe(const client_history& h) const;
};

struct check_result {
  /// violation if any partition violates; otherwise unknown if any partition
  /// gave up; otherwise linearizable.
  verdict result = verdict::linearizable;
  size_t partitions = 0;
  uint64_t steps = 0;
  /// The partitions that are not linearizable or not decided, in the order of
  /// their first operation in the history.
  std::vector<partition_report> problems;

  bool linearizable() const { return result == verdict::linearizable; }
  /// One paragraph per problem partition, after a one-line summary.
  std::string describe(const client_history& h) const;
};

/// Checks every partition of `h`.
check_result check_linearizable(const client_history& h,
                                const check_options& options = {});

/// Checks the operations `ops` of `h`, which must all belong to one partition.
partition_report check_partition(const client_history& h,
                                 const std::vector<client_history::op_index>& ops,
                                 const check_options& options = {});

} // namespace conclave::history
