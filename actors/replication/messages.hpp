// Actor-facing types of the replica host (replica_host.hpp): what clients and
// the election send it and what it answers, and the CAF inspect functions of
// the replication core's wire messages (protocols/replication/messages.hpp),
// which stay free of CAF. The type-ID block is in type_ids.hpp.
#pragma once

#include "protocols/replication/messages.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace conclave::replication {

// -- inspect functions of the core's types (found by ADL) ----------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, entry& x) {
  return f(caf::meta::type_name("repl_entry"), x.at, x.t, x.kind, x.payload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sync_request& x) {
  return f(caf::meta::type_name("repl_sync_request"), x.from, x.t);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sync_reply& x) {
  return f(caf::meta::type_name("repl_sync_reply"), x.from, x.t, x.last, x.last_term,
           x.base, x.commit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fetch_request& x) {
  return f(caf::meta::type_name("repl_fetch_request"), x.from, x.t, x.first, x.upto);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fetch_reply& x) {
  return f(caf::meta::type_name("repl_fetch_reply"), x.from, x.t, x.prev, x.prev_term,
           x.entries, x.snapshot);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append& x) {
  return f(caf::meta::type_name("repl_append"), x.from, x.t, x.prev, x.prev_term,
           x.entries, x.commit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_reply& x) {
  return f(caf::meta::type_name("repl_append_reply"), x.from, x.t, x.ok, x.matched,
           x.durable, x.hint);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stale_term& x) {
  return f(caf::meta::type_name("repl_stale_term"), x.from, x.t);
}

// -- leadership (from the election, later its leadership_event) ----------------

/// "You are the acting leader of term t": the host starts its sync phase.
struct become_primary_msg {
  term t;
};

/// "t is the current term; t.leader is primary." A host that is primary or
/// syncing under another leader steps down.
struct leader_is_msg {
  term t;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, become_primary_msg& x) {
  return f(caf::meta::type_name("repl_become_primary"), x.t);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, leader_is_msg& x) {
  return f(caf::meta::type_name("repl_leader_is"), x.t);
}

// -- client interface ------------------------------------------------------------

/// One blind write of a client transaction on a dictionary of byte strings
/// (created on first use).
struct write_op {
  std::string collection;
  std::string key;
  std::string value;
  /// true: remove the key (value ignored).
  bool remove = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_op& x) {
  return f(caf::meta::type_name("repl_write_op"), x.collection, x.key, x.value, x.remove);
}

/// A client transaction: its writes apply together, in order, at one lsn.
struct txn_request {
  std::vector<write_op> ops;
  commit_mode mode = commit_mode::strong;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, txn_request& x) {
  return f(caf::meta::type_name("repl_txn_request"), x.ops, x.mode);
}

/// Answer to a txn_request. code ok: committed at `at` (strong: durable on a
/// majority; weak: on the primary). Otherwise retry on `primary` (no_node:
/// unknown): not_primary from a secondary, syncing from a primary in its sync
/// phase, primary_changed when the primary lost its role first (outcome
/// unknown).
struct txn_result {
  errc code = errc::ok;
  lsn at;
  node_id primary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, txn_result& x) {
  return f(caf::meta::type_name("repl_txn_result"), x.code, x.at, x.primary);
}

/// A snapshot read of one key of the replica's applied (committed) state.
struct read_request {
  std::string collection;
  std::string key;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_request& x) {
  return f(caf::meta::type_name("repl_read_request"), x.collection, x.key);
}

/// Answer to a read_request: the value as of `applied`, and how many records
/// the primary had announced committed that this replica had not applied yet
/// (`behind`; 0 on the primary).
struct read_result {
  bool found = false;
  std::string value;
  lsn applied;
  uint64_t behind = 0;
  role replica_role = role::secondary;
  node_id primary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_result& x) {
  return f(caf::meta::type_name("repl_read_result"), x.found, x.value, x.applied,
           x.behind, x.replica_role, x.primary);
}

/// How far one secondary is behind (primary only; replica_core::lag()).
struct replica_lag {
  node_id peer;
  /// Records of the primary's log not yet durable there, and their bytes.
  uint64_t records = 0;
  uint64_t bytes = 0;
  /// How long it has been behind (0 when it is not).
  int64_t behind_us = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_lag& x) {
  return f(caf::meta::type_name("repl_lag"), x.peer, x.records, x.bytes, x.behind_us);
}

/// What a host reports about itself (tests, metrics and cluster status).
struct replica_status {
  node_id self;
  role replica_role = role::secondary;
  term promised;
  bool serving = false;
  lsn commit;
  lsn durable;
  lsn last;
  lsn applied;
  /// The core's drops, indexed by drop_reason.
  std::vector<uint64_t> dropped;
  /// Messages of a type the host does not know, or payloads of committed
  /// records that did not decode (never applied).
  uint64_t unknown_messages = 0;
  uint64_t bad_payloads = 0;
  /// send_snapshot effects not carried out (checkpoint streaming is not built).
  uint64_t snapshots_unsupported = 0;
  /// The host stopped: its log device or term file failed.
  bool failed = false;
  /// Primary: every secondary's lag.
  std::vector<replica_lag> lag;
  /// Sync phases this host finished as primary, and how long the last took.
  uint64_t syncs = 0;
  int64_t last_sync_us = 0;
  /// Chained hash of every record applied, in lsn order (0: none): replicas
  /// at the same applied lsn have the same digest iff they applied the same
  /// records.
  uint64_t digest = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_status& x) {
  return f(caf::meta::type_name("repl_status"), x.self, x.replica_role, x.promised,
           x.serving, x.commit, x.durable, x.last, x.applied, x.dropped,
           x.unknown_messages, x.bad_payloads, x.snapshots_unsupported, x.failed, x.lag,
           x.syncs, x.last_sync_us, x.digest);
}

} // namespace conclave::replication
