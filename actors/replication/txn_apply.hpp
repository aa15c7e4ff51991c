// How a client transaction of the replica host is checked before it is
// proposed, and how a committed one is applied to a store_core. No CAF.
//
// Checking (check_request) happens on the replica that receives the request,
// before anything is proposed: a malformed request or one over the store's
// limits is answered at once and never reaches the log.
//
// Applying (apply_txn) happens on every replica, in lsn order, to its applied
// state only once the record is committed. Every op's outcome depends only on
// that state and the ops before it, so every replica computes the same
// outcome for the same record: a dequeue takes the same item everywhere, a
// condition fails everywhere or nowhere. That is what makes a dequeue decided
// once, by the record's place in the committed log, even across failovers:
// two records never take one item, and an item is handed to a client only by
// the primary that applied the committed record. A transaction whose
// condition fails, that dequeues from a queue that does not exist, or that
// mixes up a queue and a dictionary, changes nothing (the store transaction
// is aborted); kind errors are found before anything changes, so they create
// no collection either.
#pragma once

#include "actors/replication/messages.hpp"
#include "actors/replication/session_table.hpp"
#include "protocols/store/store_core.hpp"

#include <optional>
#include <vector>

namespace conclave::replication {

/// ok, bad_request or too_large (see errc). `limits` are the store's.
/// Refuses ops on reserved collections (lease_state.hpp), malformed lease
/// ops, lease_expire (the primary's own) and more than one lease_acquire.
errc check_request(const txn_request& req, const store::core_limits& limits);

/// What applying one transaction did.
struct apply_outcome {
  errc code = errc::ok;
  /// One per op on success; on condition_failed the ops through the failing
  /// one; empty for unknown_collection and wrong_kind.
  std::vector<op_output> outputs;
  /// A sessioned retry answered from the session table (session_table.hpp):
  /// the record changed nothing; `first_at` is the lsn of the record that
  /// produced the outcome (unset when it was forgotten).
  bool duplicate = false;
  std::optional<lsn> first_at;
};

/// Applies the ops as one store transaction, or not at all. `at` is the
/// record's lsn: a lease granted by the record gets it as its token. A
/// transaction whose first op is a session op runs only if the session has
/// not settled its sequence number (session_table.hpp); its outputs then
/// start with the session op's.
apply_outcome apply_txn(store::store_core& s, const std::vector<txn_op>& ops, lsn at,
                        const session_limits& sessions = {});

} // namespace conclave::replication
