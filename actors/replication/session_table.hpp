// Client sessions of the replicated store: exactly-once transactions across
// retries, timeouts and primary changes. No CAF.
//
// A client that wants its retries deduplicated names itself with a random id
// and numbers its transactions 1, 2, 3, ... It puts a session op first in each
// transaction (op_kind::session): its id, the transaction's sequence number,
// and the lowest sequence number it still waits for an answer to. It sends the
// same transaction, with the same number, on every retry.
//
// The store keeps, per client id, the outcomes of its latest transactions
// (code, outputs and the lsn that produced them) in a reserved dictionary
// (session_collection), so the table is replicated, checkpointed and
// recovered exactly like the data it protects. Applying a sessioned record
// (apply_txn in txn_apply.hpp), on every replica alike:
// - a number whose outcome is kept: nothing changes and the kept outcome is
//   the answer (code, outputs and the first lsn). A retry of a dequeue gets
//   the item the first attempt took; a retried compare-and-set reports the
//   success of the first attempt;
// - a number below the session's floor (the client said it no longer waits
//   for it, or its outcome was dropped by the bound): outcome_unknown,
//   nothing changes. Never applied a second time;
// - any other number (a new one; numbers may arrive out of order when a
//   client has several transactions in flight): the ops apply as usual and
//   their outcome is kept.
//
// Because the check runs when a committed record is applied, in log order,
// it also covers two attempts that both reached the log (a retry sent to a
// new primary while the first attempt was still in the old one's log): the
// later record changes nothing.
//
// Bounds and expiry (the same on every replica: they use only the log):
// (session_limits; the defaults in parentheses):
// - per session, outcomes below the client's "lowest still waited for" are
//   dropped, and at most kept_outcomes (32) are kept, the newest, as many
//   as fit in one value of the store (core_limits::max_value_bytes; an
//   outcome too large to keep, a dequeued item close to that limit, is
//   forgotten at once: its retry is answered outcome_unknown);
// - a session unused for idle_expiry (10 min), by the primaries' clocks
//   stamped into the records, is removed;
// - at most max_sessions (100,000): a new session takes the place of the one
//   unused longest if that one has been unused for min_idle_evict (1 min),
//   else its transaction is refused with sessions_full.
// A retry is therefore recognised as long as it arrives within a minute of
// the session's previous transaction, whatever the load: clients never retry
// that long (client.hpp: session_retry_window), and the primaries' clocks must
// not jump ahead by more than that between two records.
#pragma once

#include "actors/replication/messages.hpp"
#include "protocols/store/store_core.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::replication {

/// The reserved dictionaries of the session table: key = client id, value =
/// encode_session(session); and the age index, key = the session's last
/// stamp (8 bytes big-endian) followed by the client id, value empty.
inline const std::string session_collection{"\0session", 8};
inline const std::string session_age_collection{"\0session_age", 12};
/// Holds the number of sessions (key "count", 8 bytes big-endian).
inline const std::string session_meta_collection{"\0session_meta", 13};

constexpr size_t max_client_id_bytes = 64;

/// The table's bounds. Every replica must apply with the same ones: the
/// store uses the defaults; tests pass small ones.
struct session_limits {
  size_t kept_outcomes = 32;
  std::chrono::milliseconds idle_expiry{10 * 60 * 1000};
  std::chrono::milliseconds min_idle_evict{60 * 1000};
  uint64_t max_sessions = 100000;
  /// Expired sessions removed per applied sessioned record, at most (the
  /// rest go with the next records).
  size_t expire_batch = 4;
};

/// What a session op says.
struct session_call {
  std::string client;
  uint64_t seq = 0;
  /// The lowest sequence number the client still waits for (<= seq).
  uint64_t waiting_from = 0;
  /// The primary's clock when it proposed the record, ms since the epoch (0:
  /// not stamped yet).
  int64_t stamp_ms = 0;
};

/// The op a client puts first (stamp_ms is ignored: the primary sets it).
txn_op make_session_op(const session_call& c);
/// nullopt: not a well-formed session op (id 1..max_client_id_bytes bytes,
/// 1 <= waiting_from <= seq, a stamp of 0 or 8 bytes).
std::optional<session_call> decode_session_op(const txn_op& op);
/// Sets the primary's stamp on a session op.
void stamp_session_op(txn_op& op, int64_t stamp_ms);

/// One kept outcome.
struct kept_outcome {
  uint64_t seq = 0;
  lsn at;
  errc code = errc::ok;
  std::vector<op_output> outputs;
};

/// One client's entry of the table.
struct session {
  int64_t last_ms = 0;
  /// Numbers below it are settled: answered (the client said so by its
  /// lowest waited-for number) or forgotten (dropped by the bound).
  uint64_t floor = 0;
  /// The applied numbers at or above floor, ascending by seq.
  std::vector<kept_outcome> kept;
};

std::string encode_session(const session& s);
/// nullopt: not written by encode_session.
std::optional<session> decode_session(std::string_view in);

/// The age index key of a session.
std::string session_age_key(int64_t last_ms, std::string_view client);

/// A sessioned record seen against the table, before its ops run.
struct session_check {
  enum class verdict {
    /// A new sequence number: run the ops, then record_outcome.
    run,
    /// Seen before and kept: answer `kept`, change nothing.
    duplicate,
    /// Seen before and forgotten: outcome_unknown, change nothing.
    forgotten,
    /// A new session and the table is full: sessions_full, change nothing.
    full,
  };
  verdict what = verdict::run;
  std::optional<kept_outcome> kept;
  /// The client's session as read (none: a new session); record_outcome
  /// updates it without reading it again.
  std::optional<session> current;
};

/// Reads the client's session and decides (within the store transaction
/// txn; writes nothing). A full table is made room in by evict_for_new when
/// the verdict is run for a new session.
session_check check_session(store::store_core& s, store::txn_id txn,
                            const session_call& c, const session_limits& limits);

/// Records the outcome of a run record and expires old sessions, in the
/// store transaction txn (which the caller commits). `current` is
/// check_session's session_check::current. Returns the store's
/// error, if any (cannot happen short of a broken store).
std::error_code record_outcome(store::store_core& s, store::txn_id txn,
                               const session_call& c, lsn at, errc code,
                               const std::vector<op_output>& outputs,
                               const std::optional<session>& current,
                               const session_limits& limits);

/// How many sessions the table holds (tests, status).
uint64_t session_count(store::store_core& s);

} // namespace conclave::replication
