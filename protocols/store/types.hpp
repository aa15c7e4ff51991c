// Strong types of the reliable collections store: log sequence numbers, terms,
// transaction and collection ids, lock modes, and time as the cores see it.
//
// Every log record carries an lsn (dense, starting at 1, one per committed
// change record) and a term. A single replica always writes term 1 for now;
// replication adds leaders with higher terms without changing the record format.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace conclave::store {

/// Time as the store cores see it: a monotonic offset from an arbitrary origin.
/// Hosts pass it in (steady_clock, or CAF's virtual clock in tests).
using timestamp = std::chrono::nanoseconds;

namespace detail {

/// A strongly typed unsigned 64-bit id; Tag keeps lsn, term, txn_id apart.
template <class Tag>
struct strong_u64 {
  uint64_t value = 0;

  friend constexpr bool operator==(strong_u64 a, strong_u64 b) {
    return a.value == b.value;
  }
  friend constexpr bool operator!=(strong_u64 a, strong_u64 b) {
    return a.value != b.value;
  }
  friend constexpr bool operator<(strong_u64 a, strong_u64 b) {
    return a.value < b.value;
  }
  friend constexpr bool operator>(strong_u64 a, strong_u64 b) {
    return a.value > b.value;
  }
  friend constexpr bool operator<=(strong_u64 a, strong_u64 b) {
    return a.value <= b.value;
  }
  friend constexpr bool operator>=(strong_u64 a, strong_u64 b) {
    return a.value >= b.value;
  }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, strong_u64& x) {
    return f(x.value);
  }
};

struct lsn_tag {};
struct term_tag {};
struct txn_tag {};

} // namespace detail

/// Log sequence number: position of a record in the log. 0 means "none".
using lsn = detail::strong_u64<detail::lsn_tag>;
/// Leadership term stamped on every record (1 for a single replica).
using term = detail::strong_u64<detail::term_tag>;
/// Identity of a transaction within one store instance. 0 means "none".
using txn_id = detail::strong_u64<detail::txn_tag>;

inline std::string to_string(lsn x) {
  return std::to_string(x.value);
}

/// Index of a collection in the store (assigned at creation, logged).
using collection_id = uint32_t;

/// The two collection kinds.
enum class collection_kind : uint8_t { dictionary = 1, queue = 2 };

/// Lock modes, weakest first. See lock_manager.hpp for the compatibility table.
enum class lock_mode : uint8_t { shared = 0, update = 1, exclusive = 2 };

/// How a single-entity read (try_get, contains) reads.
enum class read_mode : uint8_t {
  /// No lock; the value committed when the transaction began.
  snapshot = 0,
  /// Shared lock held to the end; the latest committed value.
  repeatable = 1,
  /// Update lock held to the end (use before writing the same key).
  update = 2,
};

} // namespace conclave::store
