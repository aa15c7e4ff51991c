// Leases in the replicated store: what a lease is in the applied state, and
// how lease ops (messages.hpp: lease_acquire ... expect_lease) change it.
// No CAF, no clock: everything here is applied alike on every replica.
//
// A lease is a named set of at most `limit` slots (1: a mutex; N: a
// semaphore). Each slot is held by one holder (an id the client chooses,
// unique per process and attempt) with a fencing token: the lsn of the record
// that granted the slot. The committed log is one sequence of lsns across
// every primary change, so a later grant always has a larger token than every
// earlier grant, of any lease, under any primary.
//
// Time is not part of the replicated state: when a slot expires is decided by
// the acting primary alone (lease_table.hpp), which then proposes a
// lease_expire record. The state keeps each holder's ttl so that a new
// primary can restart every holder's full ttl when it starts serving.
//
// The table lives in a reserved dictionary (lease_collection) whose name
// starts with a NUL byte; clients cannot write to it except by lease ops.
#pragma once

#include "actors/replication/messages.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::replication {

/// The reserved dictionary that holds every lease: key = lease name, value =
/// encode_lease(lease).
inline const std::string lease_collection{"\0lease", 6};

/// Not stored: a list_request of this collection is answered by the acting
/// primary from the acquires waiting in its memory (lease_waiters): key =
/// lease name, NUL, the waiter's place in the queue (8 decimal digits from
/// 00000001); value = encode_waiter(...). Any other replica lists it empty.
inline const std::string lease_waiters_collection{"\0lease-waiters", 14};

/// True for names clients may not use as a collection (reserved: they start
/// with a NUL byte).
inline bool reserved_collection(std::string_view name) {
  return !name.empty() && name.front() == '\0';
}

/// What a lease_acquire asks for (its op's value).
struct lease_params {
  /// How long the holder may go without a renewal. 1 ms .. 1 day.
  std::chrono::milliseconds ttl{10000};
  /// Slots of the lease (1: a mutex). Fixed by the first grant while anyone
  /// holds the lease; an acquire asking for another limit is refused
  /// (bad_request when checked, lease_busy when applied).
  uint32_t limit = 1;
  /// How long the primary keeps the request waiting for a free slot (FIFO)
  /// before it answers lease_busy; 0: answer at once.
  std::chrono::milliseconds wait{0};
  /// Shown with the holder (node, process, anything the client likes).
  std::string label;
};

constexpr std::chrono::milliseconds max_lease_ttl = std::chrono::hours(24);
constexpr uint32_t max_lease_limit = 1u << 16;

std::string encode_params(const lease_params& p);
std::optional<lease_params> decode_params(std::string_view in);

struct lease_holder {
  std::string holder;
  uint64_t token = 0;
  std::chrono::milliseconds ttl{0};
  std::string label;
};

/// One lease in the applied state. No holders: the key is absent.
struct lease {
  uint32_t limit = 1;
  std::vector<lease_holder> holders;
};

std::string encode_lease(const lease& l);
std::optional<lease> decode_lease(std::string_view in);

/// An acquire waiting for a slot, as the primary lists it.
struct lease_waiter {
  std::string holder;
  std::string label;
  std::chrono::milliseconds ttl{0};       ///< asked for
  std::chrono::milliseconds wait_left{0}; ///< until it is answered lease_busy
};

std::string encode_waiter(const lease_waiter& w);
std::optional<lease_waiter> decode_waiter(std::string_view in);

/// The lease_waiters_collection key of the `place`th waiter (from 1) of
/// lease `name`, and back (nullopt: not such a key).
std::string waiter_key(const std::string& name, uint32_t place);
std::optional<std::pair<std::string, uint32_t>> parse_waiter_key(std::string_view key);

/// Tokens travel as decimal strings (op values and outputs).
std::string format_token(uint64_t token);
/// Nothing for anything but 1..2^64-1 in plain decimal.
std::optional<uint64_t> parse_token(std::string_view s);

/// What applying a lease op to a lease did. `changed`: write `after` back
/// (or remove the key when it has no holders).
struct lease_step {
  errc code = errc::ok;
  bool changed = false;
  lease after;
  op_output out;
};

/// Applies one lease op (is_lease_op(op.kind)) at lsn `at` to the lease as it
/// is (`current`: nothing if absent). Pure: the same inputs give the same
/// result on every replica.
lease_step apply_lease_op(const std::optional<lease>& current, const txn_op& op, lsn at);

/// ok, bad_request: a lease op's fields are well formed (name and holder not
/// empty, params or token decode, params in range; lease_expire refused).
errc check_lease_op(const txn_op& op);

} // namespace conclave::replication
