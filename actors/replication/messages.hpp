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
           x.entries, x.commit, x.last);
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

// -- checkpoint streaming (replica host to replica host) ------------------------

/// One piece of a checkpoint a host streams to a peer (the core's
/// send_snapshot effect). A stream is `count` chunks with indexes 0..count-1,
/// sent in order; the receiver reassembles them, checks the image's checksum
/// (checkpoint_image.hpp) and that it is the checkpoint at (at, at_term), and
/// only then offers it to its core. `stream` tells streams of one sender apart.
struct snapshot_chunk {
  node_id from;
  /// The sender's promised term when it started the stream.
  term t;
  lsn at;
  term at_term;
  uint64_t stream = 0;
  uint32_t index = 0;
  uint32_t count = 0;
  std::string data;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, snapshot_chunk& x) {
  return f(caf::meta::type_name("repl_snapshot_chunk"), x.from, x.t, x.at, x.at_term,
           x.stream, x.index, x.count, x.data);
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

/// What one op of a client transaction does. Dictionaries and queues hold byte
/// strings and are created by their first put / enqueue.
enum class op_kind : uint8_t {
  /// Dictionary: key = value.
  put = 0,
  /// Dictionary: removes the key (value ignored).
  remove = 1,
  /// Queue `collection`: appends value (key ignored).
  enqueue = 2,
  /// Queue `collection`: takes the oldest item, if any (key, value ignored).
  dequeue = 3,
  /// Condition: the key holds exactly `value`, else the whole transaction
  /// changes nothing (condition_failed).
  expect_value = 4,
  /// Condition: the key is absent, else condition_failed.
  expect_absent = 5,
  // -- leases (lease_state.hpp): `collection` is the lease's name, `key` the
  // holder's id; the lease table lives in a reserved dictionary.
  /// Takes a slot of the lease for holder `key`; value = encoded
  /// lease_params. Granted: outputs[0].value = the fencing token (the
  /// record's lsn, in decimal). Already held by `key`: the same token (a
  /// renewal). Every slot held by others: lease_busy.
  lease_acquire = 6,
  /// The holder still holds the lease with token `value`: ok (the primary
  /// restarts its expiry), else stale_token.
  lease_renew = 7,
  /// Frees the holder's slot if it holds token `value`, else stale_token.
  lease_release = 8,
  /// Like lease_release, proposed only by the primary when the holder's time
  /// ran out; refused from clients.
  lease_expire = 9,
  /// Fencing condition: some holder of lease `collection` holds token
  /// `value`, else the whole transaction changes nothing (stale_token).
  expect_lease = 10,
  /// Client session (session_table.hpp): only as a transaction's first op.
  /// `collection` is the client's id, `key` the request's sequence number
  /// and the lowest one the client still waits for, `value` the primary's
  /// clock when it proposed the record (the primary sets it). A retry of a
  /// sequence number the store has applied gets the first outcome back and
  /// changes nothing. outputs[0].found: this was such a retry.
  session = 11,
};

/// The highest op kind a record may carry.
constexpr op_kind last_op_kind = op_kind::session;

constexpr bool is_lease_op(op_kind k) {
  return k >= op_kind::lease_acquire && k <= op_kind::expect_lease;
}

/// True for the kinds whose outcome depends on the state they are applied
/// to (a dequeue's item, a condition, a lease): such a transaction must be
/// strong.
constexpr bool reads_state(op_kind k) {
  return k == op_kind::dequeue || k == op_kind::expect_value
         || k == op_kind::expect_absent || is_lease_op(k);
}

/// One op of a client transaction.
struct txn_op {
  std::string collection;
  std::string key;
  std::string value;
  op_kind kind = op_kind::put;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, txn_op& x) {
  return f(caf::meta::type_name("repl_txn_op"), x.collection, x.key, x.value, x.kind);
}

/// A client transaction: its ops apply together, in order, at one lsn, on
/// every replica alike; if any op fails (a condition, an unknown queue, a
/// collection of the other kind) none of them changes anything.
struct txn_request {
  std::vector<txn_op> ops;
  commit_mode mode = commit_mode::strong;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, txn_request& x) {
  return f(caf::meta::type_name("repl_txn_request"), x.ops, x.mode);
}

/// What one op of a committed transaction saw, in the state it was applied
/// to. put: found = the key existed before. remove: found = it existed, value
/// = the old value. enqueue: found = true. dequeue: found = an item was
/// taken, value = the item. expect_*: found = the condition held, value = the
/// key's value when present.
struct op_output {
  bool found = false;
  std::string value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_output& x) {
  return f(caf::meta::type_name("repl_op_output"), x.found, x.value);
}

/// Answer to a txn_request.
/// - ok: committed at `at` (strong: durable on a majority; weak: on the
///   primary); `outputs` has one entry per op (strong only: a weak commit is
///   answered before it is applied, so its outputs are empty).
/// - condition_failed, unknown_collection, wrong_kind: committed at `at` as a
///   record that changed nothing; `outputs` holds the ops up to and including
///   the one that failed.
/// - not_primary (a secondary), syncing (a primary in its sync phase): not
///   proposed; retry on `primary` (no_node: unknown).
/// - primary_changed: the primary lost its role first; outcome unknown.
/// - bad_request, too_large: refused before proposing; nothing written.
/// - timeout, outcome_unknown: only from the client library (types.hpp).
struct txn_result {
  errc code = errc::ok;
  lsn at;
  node_id primary;
  std::vector<op_output> outputs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, txn_result& x) {
  return f(caf::meta::type_name("repl_txn_result"), x.code, x.at, x.primary, x.outputs);
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
/// (`behind`; 0 on the primary). code: ok, or wrong_kind (a queue), or
/// timeout (client library).
struct read_result {
  errc code = errc::ok;
  bool found = false;
  std::string value;
  lsn applied;
  uint64_t behind = 0;
  role replica_role = role::secondary;
  node_id primary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_result& x) {
  return f(caf::meta::type_name("repl_read_result"), x.code, x.found, x.value, x.applied,
           x.behind, x.replica_role, x.primary);
}

/// A snapshot read of the keys of a dictionary that start with `prefix`, in
/// key order, after `start_after` (empty: from the first), at most `limit`
/// of them (0 or above the host's maximum: the host's maximum).
struct list_request {
  std::string collection;
  std::string prefix;
  std::string start_after;
  uint32_t limit = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_request& x) {
  return f(caf::meta::type_name("repl_list_request"), x.collection, x.prefix,
           x.start_after, x.limit);
}

/// One key and its value.
struct kv_item {
  std::string key;
  std::string value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_item& x) {
  return f(caf::meta::type_name("repl_kv_item"), x.key, x.value);
}

/// Answer to a list_request: the items as of `applied` (and `behind`, role,
/// primary as in read_result). `more`: items were left out by the count or
/// byte bound; ask again with start_after = the last key. A dictionary that
/// does not exist lists as empty. code: ok, wrong_kind (a queue), timeout
/// (client library).
struct list_result {
  errc code = errc::ok;
  std::vector<kv_item> items;
  bool more = false;
  lsn applied;
  uint64_t behind = 0;
  role replica_role = role::secondary;
  node_id primary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_result& x) {
  return f(caf::meta::type_name("repl_list_result"), x.code, x.items, x.more, x.applied,
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
  /// send_snapshot effects not carried out: the host held no checkpoint at
  /// the lsn the core asked for (should stay 0).
  uint64_t snapshots_unsupported = 0;
  /// Committed transactions that changed nothing: a condition failed, an
  /// unknown queue, a collection of the other kind, or an op the store
  /// refused (same on every replica).
  uint64_t txns_refused = 0;
  /// The host stopped: its log device or term file failed.
  bool failed = false;
  /// Primary: every secondary's lag.
  std::vector<replica_lag> lag;
  /// The most bytes this host ever had in flight to one secondary
  /// (replica_stats::peak_inflight_bytes).
  uint64_t peak_inflight_bytes = 0;
  /// The largest record it ever shipped in one append
  /// (replica_stats::largest_record_bytes).
  uint64_t largest_record_bytes = 0;
  /// Sync phases this host finished as primary, and how long the last took.
  uint64_t syncs = 0;
  int64_t last_sync_us = 0;
  /// Chained hash of every record applied, in lsn order (0: none): replicas
  /// at the same applied lsn have the same digest iff they applied the same
  /// records.
  uint64_t digest = 0;
  /// Checkpoints this host wrote (and failed to write: not fatal, the log
  /// still holds the records), and the lsn of the newest one it holds
  /// (written or installed; 0: none).
  uint64_t checkpoints_written = 0;
  uint64_t checkpoint_failures = 0;
  lsn checkpoint_lsn;
  /// Checkpoint streams sent (one per send_snapshot effect) and their
  /// chunks; streams received, checked and installed; chunks dropped
  /// (garbage, stale term, out of order, non-member, too large, or a
  /// checkpoint that did not check out).
  uint64_t snapshots_sent = 0;
  uint64_t snapshot_chunks_sent = 0;
  uint64_t snapshots_installed = 0;
  uint64_t snapshot_chunks_dropped = 0;
  /// Sessioned retries answered from the session table instead of applied
  /// again (session_table.hpp).
  uint64_t session_duplicates = 0;
  /// The replica lost its log and is rebuilding it from its peers: it takes
  /// no part in choosing a new primary's log until then.
  bool amnesiac = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_status& x) {
  return f(caf::meta::type_name("repl_status"), x.self, x.replica_role, x.promised,
           x.serving, x.commit, x.durable, x.last, x.applied, x.dropped,
           x.unknown_messages, x.bad_payloads, x.snapshots_unsupported, x.txns_refused,
           x.failed, x.lag, x.peak_inflight_bytes, x.largest_record_bytes, x.syncs,
           x.last_sync_us, x.digest, x.checkpoints_written, x.checkpoint_failures,
           x.checkpoint_lsn, x.snapshots_sent, x.snapshot_chunks_sent,
           x.snapshots_installed, x.snapshot_chunks_dropped, x.session_duplicates,
           x.amnesiac);
}

} // namespace conclave::replication
