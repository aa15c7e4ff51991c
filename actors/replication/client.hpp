// The client library of a replica set: runs transactions, reads and lists
// against the cluster through its primary, from any process.
//
// It knows the members and a way to get a replica host's handle per member
// (client_options::lookup: the node or CLI plugs in remote handles, tests
// local ones). It does not know who is primary: it asks the last primary it
// heard of (at first client_options::primary, e.g. the one a member's gate
// named), else the members in turn, skipping those it cannot reach now, and
// follows the answers.
//
// Routing and retries (per request, until client_options::deadline):
// - not_primary with a hint: asks the named primary at once (at most one
//   immediate redirect per member in a row, then with backoff); without a
//   hint: the next member, after a backoff.
// - syncing: the same primary again after a backoff (it serves once its sync
//   phase is over).
// - A read or list answered by a replica that is not an acting primary is
//   treated like not_primary: reads go to the primary (its applied state holds
//   every acknowledged strong commit).
// - A request the host never handled (CAF's request_receiver_down: the host
//   actor was dead, or stopped with the request still in its mailbox, or its
//   node knows no such actor): retried, whatever it is (next member, backoff).
// - No answer within attempt_timeout, primary_changed: reads and sessioned
//   transactions are retried (next member, backoff). A sessioned
//   transaction (client_options::sessions, on by default) carries the
//   client's id and a sequence number that its retries repeat, and the store
//   answers a retry of an applied one with the first outcome
//   (session_table.hpp): an enqueue is added once, a dequeue's item reaches
//   the caller, a compare-and-set that committed reports success. With
//   sessions off, idempotent transactions are retried, and one that is not
//   (any enqueue or dequeue) is answered outcome_unknown: it may have
//   committed.
// - Without sessions, condition_failed from a retry of a transaction whose
//   earlier attempt may have committed is answered outcome_unknown: the
//   earlier attempt's own write may be what failed the condition.
// - outcome_unknown is also the answer when the store no longer knows the
//   outcome of a sessioned retry (retried past session_retry_window, or the
//   client had more than the store keeps in flight at once).
// - Backoff doubles from backoff_first to backoff_max, with jitter (a
//   random half of it; seeded, so runs under CAF's test coordinator repeat).
// - Everything else (ok, condition_failed, unknown_collection, wrong_kind,
//   bad_request, too_large, sessions_full) is the answer. The deadline
//   passing without one gives outcome_unknown for a transaction an attempt
//   of which may have committed (sent, and no settling answer), else
//   errc::timeout (nothing was proposed, or a read).
//
// Two APIs:
// - spawn_client(): an actor that answers txn_request, read_request and
//   list_request like a replica host does (with the errc of types.hpp), for
//   actors and for tests on the test coordinator;
// - kv_client: a blocking facade over it for threads (the `conclave kv`
//   CLI), which waits on a scoped_actor. Not usable under the test
//   coordinator (nothing would run while it waits).
// Every process using it registers the replication type-ID block
// (cfg.add_message_types<caf::id_block::conclave_replication>()).
#pragma once

#include "actors/replication/type_ids.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace conclave::replication {

/// A replica host's handle for a member; an invalid handle means "cannot
/// reach it now" (the client tries another member). Called on the client
/// actor's thread before every attempt: it must not block (connect to the
/// members beforehand, or asynchronously, and return what is connected).
using host_lookup = std::function<caf::actor(node_id)>;

struct client_options {
  /// Every member of the replica set.
  std::vector<node_id> members;
  host_lookup lookup;
  /// The primary to ask first (e.g. the one a member's gate named at
  /// connect time); no_node: ask the members in turn.
  node_id primary = no_node;
  /// How long one attempt waits for an answer.
  caf::timespan attempt_timeout = std::chrono::seconds(1);
  /// How long a request may take in all, retries included.
  caf::timespan deadline = std::chrono::seconds(5);
  /// Backoff between retries. Short on purpose: a retry is one cheap round
  /// trip, and while a failover is under way a client finds the new primary
  /// only by asking again (a 200 ms cap added up to 97 ms, median 33 ms, to
  /// failover-to-first-commit; scripts/bench-repl-failover.sh).
  caf::timespan backoff_first = std::chrono::milliseconds(2);
  caf::timespan backoff_max = std::chrono::milliseconds(20);
  /// Seeds the backoff jitter.
  uint64_t seed = 1;
  /// Exactly-once transactions (session_table.hpp): every transaction
  /// without lease acquire/renew/release carries this client's id and a
  /// sequence number, so the store answers a retry with the first attempt's
  /// outcome instead of applying it again. Such transactions are retried
  /// after a lost answer whatever their ops (enqueue and dequeue included).
  bool sessions = true;
  /// The client's session id (1..64 bytes); empty: 16 random bytes in hex.
  std::string session_id;
  /// Called on the client actor's thread with a line on each attempt that
  /// did not settle its request ("node 1: not_primary, names node 3",
  /// "node 3: not connected", "node 2: request_timeout"): what a caller
  /// shows when the deadline passes. Must not block.
  std::function<void(const std::string&)> on_problem;
};

/// How long after its first attempt a sessioned transaction is still
/// retried; later it is answered outcome_unknown. The store keeps a session
/// that was used within the last minute (session_table.hpp), so a retry
/// within this window is always recognised.
constexpr std::chrono::seconds session_retry_window{50};

/// True if the client puts a session op on this transaction: sessions are
/// on and it has no lease acquire, renew or release (those are keyed by
/// their holder and safe to repeat already).
bool session_eligible(const txn_request& req);

/// True if running the transaction twice is harmless (no enqueue, no
/// dequeue): the client retries it after an unknown outcome.
bool idempotent(const txn_request& req);

/// Spawns the client actor (see above). Stop it with an exit message.
caf::actor spawn_client(caf::actor_system& sys, client_options opts);

/// Blocking facade for threads. Every call returns within deadline plus a
/// small margin (kv_client::margin), whatever the members do: the client
/// actor answers timeout at the deadline, and the caller stops waiting for
/// it shortly after. Neither the calls nor the destructor wait on a peer.
class kv_client {
public:
  /// How long a call waits for the client actor past client_options::deadline.
  static constexpr std::chrono::milliseconds margin{50};

  kv_client(caf::actor_system& sys, client_options opts);
  ~kv_client();
  kv_client(const kv_client&) = delete;
  kv_client& operator=(const kv_client&) = delete;

  /// The value of a key in the primary's applied state.
  read_result get(const std::string& collection, const std::string& key);
  /// Keys starting with prefix, in order, after start_after; `more` says
  /// whether to ask again from the last key.
  list_result list(const std::string& collection, const std::string& prefix,
                   uint32_t limit = 0, const std::string& start_after = {});
  txn_result put(const std::string& collection, const std::string& key,
                 const std::string& value, commit_mode mode = commit_mode::strong);
  /// outputs[0].found: the key existed.
  txn_result remove(const std::string& collection, const std::string& key);
  /// Not retried after an unknown outcome (outcome_unknown).
  txn_result enqueue(const std::string& queue, const std::string& value);
  /// outputs[0]: found and the item. Not retried after an unknown outcome.
  txn_result dequeue(const std::string& queue);
  /// Writes `desired` (nullopt: removes the key) if the key holds `expected`
  /// (nullopt: is absent); else condition_failed with outputs[0].value = the
  /// key's current value. Safe to retry.
  txn_result compare_and_set(const std::string& collection, const std::string& key,
                             const std::optional<std::string>& expected,
                             const std::optional<std::string>& desired);
  /// Any transaction.
  txn_result transact(const txn_request& req);

  /// The client actor, for asynchronous use next to the blocking calls.
  const caf::actor& actor() const { return client_; }

private:
  template <class Result, class Request>
  Result ask(const Request& req);

  caf::actor_system& sys_;
  client_options opts_;
  caf::actor client_;
};

} // namespace conclave::replication
