// replica_log: the replication core's view of one replica's log since its last
// checkpoint. Positions base+1 .. last hold records; `base` (lsn and term) is the
// last record covered by the checkpoint (or an installed snapshot), whose
// records the log no longer holds.
//
// It mirrors what the host wrote to its log device: the core changes it and, in
// the same call, emits the matching effect (append, truncate), so the two stay
// equal. It also keeps running byte totals so that lag and in-flight bytes are
// computed without walking the records.
#pragma once

#include "protocols/replication/types.hpp"

#include <deque>
#include <optional>
#include <vector>

namespace conclave::replication {

class replica_log {
public:
  replica_log() = default;
  /// A log that starts after (base, base_term) and holds `entries`
  /// (contiguous from base+1).
  replica_log(lsn base, term base_term, std::vector<entry> entries);

  lsn base() const { return base_; }
  term base_term() const { return base_term_; }
  lsn last() const { return lsn{base_.value + entries_.size()}; }
  term last_term() const { return entries_.empty() ? base_term_ : entries_.back().t; }
  bool empty() const { return entries_.empty(); }

  /// The term of the record at `at`: base_term at base, nothing below base or
  /// past the end.
  std::optional<term> term_at(lsn at) const;
  /// Whether the log holds a record at (at, t), or `at` is the base with term t.
  bool matches(lsn at, term t) const;
  /// The record at `at` (base < at <= last).
  const entry& at(lsn at) const { return entries_[at.value - base_.value - 1]; }

  /// Appends `e`; e.at must be last+1.
  void append(entry e);
  /// Drops every record after `at` (at >= base).
  void truncate_after(lsn at);
  /// Drops the records through `at` (base <= at <= last): a checkpoint covers them.
  void compact_through(lsn at);
  /// Empties the log; it now starts after (at, t) (an installed snapshot).
  void reset(lsn at, term t);

  /// Bytes (entry_bytes) of the records in (from, to], clamped to the log.
  uint64_t bytes_between(lsn from, lsn to) const;

private:
  lsn base_;
  term base_term_;
  std::deque<entry> entries_;
  /// totals_[i]: bytes of every record appended since the log was made (or
  /// reset), through entries_[i]; totals_offset_ is the total through base.
  std::deque<uint64_t> totals_;
  uint64_t totals_offset_ = 0;
};

} // namespace conclave::replication
