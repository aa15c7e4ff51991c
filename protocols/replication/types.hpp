// Strong types of the replication core: who the replicas are, which term a
// message or record belongs to, where a record sits in the log, and the record
// itself as replication sees it.
//
// Ids and terms are the election's (protocols/election/types.hpp): the primary
// of a replica set is the elected leader while it acts, and its replication term
// is its election term, (epoch, leader id, incarnation), totally ordered. Log
// positions are the store's lsn (protocols/store/types.hpp). No CAF, no I/O:
// these headers are plain C++17.
#pragma once

#include "protocols/election/types.hpp"
#include "protocols/store/types.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace conclave::replication {

using election::duration;
using election::no_node;
using election::node_id;
using election::term;
using election::timestamp;
using store::lsn;

/// Identity of a client transaction, chosen by the host; reported back in
/// commit_acked / txn_failed effects.
struct txn_ref {
  uint64_t value = 0;
  friend constexpr bool operator==(txn_ref a, txn_ref b) { return a.value == b.value; }
  friend constexpr bool operator!=(txn_ref a, txn_ref b) { return a.value != b.value; }
  friend constexpr bool operator<(txn_ref a, txn_ref b) { return a.value < b.value; }
};

/// What a log record carries.
enum class entry_kind : uint8_t {
  /// A client transaction; `payload` is the host's encoded record (the store's
  /// commit record body), opaque to replication.
  transaction = 1,
  /// Written once by a primary when its sync phase has chosen the log; empty
  /// payload. Committing it commits everything before it.
  new_primary = 2,
};

std::string_view to_string(entry_kind k);

/// One record of the replicated log.
struct entry {
  lsn at;
  term t;
  entry_kind kind = entry_kind::transaction;
  std::string payload;
};

/// Bytes a record costs in flow control and lag reports: the payload plus the
/// store's frame header (24 bytes).
inline uint64_t entry_bytes(const entry& e) {
  return 24 + e.payload.size();
}

/// How a client transaction is acknowledged.
enum class commit_mode : uint8_t {
  /// Once durable on a majority of the members, the primary included.
  strong = 0,
  /// Once durable on the primary alone (may be lost if the primary fails
  /// before a majority has it).
  weak = 1,
};

/// Role of a replica. `syncing` is a primary that has not finished its sync
/// phase: it serves no client transactions yet.
enum class role : uint8_t { secondary = 0, syncing = 1, primary = 2 };

std::string_view to_string(role r);

/// Errors reported to clients. The core's own (txn_failed, propose: 1-3) are
/// retryable on the node named by the error's primary hint; the others are
/// answers of the replica host and the client library (actors/replication).
enum class errc : uint8_t {
  ok = 0,
  /// This replica is not the primary.
  not_primary = 1,
  /// This replica is the primary but its sync phase has not finished.
  syncing = 2,
  /// The primary lost its role before the transaction committed. The outcome
  /// is unknown: the next primary may still commit the record.
  primary_changed = 3,
  // -- answers to a client request (replica host, client library) -----------
  /// The request is malformed: no ops, an empty collection name or key, an
  /// unknown op kind, a weak transaction that reads (dequeue, expect_*).
  /// Nothing was proposed. Not retryable.
  bad_request = 4,
  /// A name, key, value or the whole transaction exceeds the store's limits.
  /// Nothing was proposed. Not retryable.
  too_large = 5,
  /// An expect_value / expect_absent op did not hold when the transaction was
  /// applied: the transaction committed as a record that changed nothing.
  condition_failed = 6,
  /// A dequeue on a queue that does not exist: the record changed nothing.
  unknown_collection = 7,
  /// An op on a collection of the other kind (a queue op on a dictionary or
  /// the reverse): the record changed nothing.
  wrong_kind = 8,
  /// Client library: the deadline passed without an answer, and no attempt
  /// of the request can have committed (none reached a primary that might
  /// log it), or it is a read.
  timeout = 9,
  /// The transaction may or may not have committed. From the client library:
  /// the deadline passed after an attempt that may have committed (no
  /// majority answered in time), or, with sessions off, a transaction that
  /// is not idempotent (enqueue, dequeue) lost its answer and was not
  /// retried. From the store: a sessioned retry whose outcome the session no
  /// longer keeps (session_table.hpp); nothing was applied by the retry.
  outcome_unknown = 10,
  /// A lease acquire found every slot of the lease held by others (and its
  /// wait, if any, ran out): the record changed nothing. outputs[0].value
  /// lists the holders (actors/replication/lease_state.hpp).
  lease_busy = 11,
  /// A lease op or an expect_lease condition named a fencing token that does
  /// not hold the lease (any more): the transaction changed nothing.
  stale_token = 12,
  /// A transaction of a new client session found the store's session table
  /// full of sessions used within the last minute (session_table.hpp):
  /// nothing changed. Retry later.
  sessions_full = 13,
};

std::string_view to_string(errc e);

} // namespace conclave::replication
