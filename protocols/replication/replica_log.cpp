#include "protocols/replication/replica_log.hpp"

namespace conclave::replication {

replica_log::replica_log(lsn base, term base_term, std::vector<entry> entries)
    : base_(base), base_term_(base_term) {
  for (auto& e : entries)
    append(std::move(e));
}

std::optional<term> replica_log::term_at(lsn x) const {
  if (x == base_)
    return base_term_;
  if (x < base_ || x > last())
    return std::nullopt;
  return at(x).t;
}

bool replica_log::matches(lsn x, term t) const {
  auto have = term_at(x);
  return have && *have == t;
}

void replica_log::append(entry e) {
  uint64_t before = totals_.empty() ? totals_offset_ : totals_.back();
  totals_.push_back(before + entry_bytes(e));
  entries_.push_back(std::move(e));
}

void replica_log::truncate_after(lsn x) {
  if (x < base_)
    x = base_;
  while (last() > x) {
    entries_.pop_back();
    totals_.pop_back();
  }
}

void replica_log::compact_through(lsn x) {
  if (x <= base_)
    return;
  if (x > last())
    x = last();
  base_term_ = at(x).t;
  while (base_ < x) {
    totals_offset_ = totals_.front();
    entries_.pop_front();
    totals_.pop_front();
    base_.value += 1;
  }
}

void replica_log::reset(lsn x, term t) {
  entries_.clear();
  totals_.clear();
  totals_offset_ = 0;
  base_ = x;
  base_term_ = t;
}

uint64_t replica_log::bytes_between(lsn from, lsn to) const {
  if (from < base_)
    from = base_;
  if (to > last())
    to = last();
  if (to <= from)
    return 0;
  auto hi = totals_[to.value - base_.value - 1];
  auto lo = from == base_ ? totals_offset_ : totals_[from.value - base_.value - 1];
  return hi - lo;
}

} // namespace conclave::replication
