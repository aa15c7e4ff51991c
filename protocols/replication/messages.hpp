// Wire messages of the replication protocol (docs/design/replication.md).
//
// Every message names its sender (`from`) and carries the sender's term `t`:
// the primary's term for what a primary sends, the replica's promised term for
// replies. A replica drops anything from a non-member and anything stamped with
// a term lower than the highest it has promised, and counts it.
//
// Message flow:
//   sync phase   primary -> all:  sync_request;   replica -> primary: sync_reply
//                primary -> most advanced replica: fetch_request; it answers
//                fetch_reply (or a snapshot effect, then fetch_reply continues)
//   replication  primary -> secondary: append (records, commit lsn; empty as a
//                heartbeat); secondary -> primary: append_reply (matched and
//                durable lsn, or a rejection with a hint where to resume)
//   fencing      anyone -> sender of a stale request: stale_term
// CAF serialization lives with the host actor (not yet built), not here.
#pragma once

#include "protocols/replication/types.hpp"

#include <array>
#include <string_view>
#include <variant>
#include <vector>

namespace conclave::replication {

/// New primary -> every member: "report your durable log; promise term t".
struct sync_request {
  node_id from;
  term t;
};

/// Replica -> primary: the last record of its durable log, its checkpoint base
/// and commit lsn, sent once it has promised t.
struct sync_reply {
  node_id from;
  term t;
  lsn last;
  term last_term;
  lsn base;
  lsn commit;
};

/// Syncing primary -> the most advanced replica: "send your records from
/// `first` through `upto`".
struct fetch_request {
  node_id from;
  term t;
  lsn first;
  lsn upto;
};

/// Answer to fetch_request: contiguous records starting at prev+1 (at most one
/// batch). `snapshot` set: the records before `first` are gone (checkpoint);
/// the sender's host streams its checkpoint at `prev` instead (send_snapshot
/// effect) and the requester asks again after installing it.
struct fetch_reply {
  node_id from;
  term t;
  lsn prev;
  term prev_term;
  std::vector<entry> entries;
  bool snapshot = false;
};

/// Primary -> secondary: records after (prev, prev_term) and the primary's
/// commit lsn. Without records it is a heartbeat (and a probe of where the
/// secondary's log matches).
struct append {
  node_id from;
  term t;
  lsn prev;
  term prev_term;
  std::vector<entry> entries;
  lsn commit;
  /// The primary's last record when it sent this (an amnesiac secondary is
  /// rebuilt once it holds the log through here: replica_core.hpp).
  lsn last;
};

/// Secondary -> primary. ok: its log matches the primary's through `matched`
/// and is durable through `durable` (<= matched). Not ok: no match at the
/// append's prev; the primary resumes after `hint`.
struct append_reply {
  node_id from;
  term t;
  bool ok = false;
  lsn matched;
  lsn durable;
  lsn hint;
};

/// "Your term is stale: I have promised t." Sent in answer to a request stamped
/// with a lower term, so that a deposed primary steps down.
struct stale_term {
  node_id from;
  term t;
};

using message = std::variant<sync_request, sync_reply, fetch_request, fetch_reply, append,
                             append_reply, stale_term>;

constexpr size_t message_type_count = std::variant_size_v<message>;

/// Names of the message types, indexed like `message` (counters, metrics).
constexpr std::array<std::string_view, message_type_count> message_type_names{
    "sync_request", "sync_reply",   "fetch_request", "fetch_reply",
    "append",       "append_reply", "stale_term"};

inline node_id sender(const message& m) {
  return std::visit([](const auto& x) { return x.from; }, m);
}

inline const term& term_of(const message& m) {
  return std::visit([](const auto& x) -> const term& { return x.t; }, m);
}

} // namespace conclave::replication
