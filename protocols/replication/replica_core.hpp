// replica_core: one member of a replica set, as a pure state machine. It decides
// what the replica's log holds, when a record is committed, what a secondary may
// apply, and what to send to whom; the host does the I/O.
//
// Shape (etcd's raft, the election cores): the host calls an input
// (become_primary, step_down, handle, propose, flush, log_durable,
// snapshot_offered, checkpointed, tick) with the current time, then drains
// effects() IN ORDER and only then sends outbox(). Effects: persist_term (must
// be durable before any message of the same batch leaves), append_records and
// truncate_after (the log device; a truncation is durable when done, appended
// records only once the host reports log_durable), apply_through, commit_acked,
// txn_failed, send_snapshot, sync_finished. The host arms one timer for
// next_deadline() and calls tick() when it fires; late or spurious ticks are
// harmless.
//
// Protocol (docs/design/replication.md has the argument):
// - Terms fence. A replica remembers (durably) the highest term it promised; a
//   message with a lower term is dropped, counted and answered with stale_term.
//   A higher term is promised at once; a primary that sees one steps down.
// - Sync phase (Viewstamped Replication's view change, Zab's synchronisation).
//   A new primary collects the last (term, lsn) of the DURABLE log of a
//   majority, itself included; each reply is a promise of the new term. It
//   chooses the most advanced of them (highest last term, then highest lsn),
//   fetches the records it lacks from that replica, drops its own records past
//   the chosen end, and appends a new_primary record in its term. It serves
//   client transactions once that record is committed.
// - Replication (Raft's log matching). The primary ships records after
//   (prev, prev_term); a secondary accepts only if it holds that record,
//   truncates a conflicting suffix (never a committed record), and reports how
//   far its log matches and is durable. Shipping is pipelined and batched;
//   each secondary has a window of in-flight bytes, so a slow secondary costs
//   a bounded amount and never holds back the commit of a healthy majority.
// - Commit. A record at or after the primary's new_primary record is committed
//   when a majority, the primary included, has it durable; committing it
//   commits everything before it. Strong transactions are acknowledged then;
//   weak ones once the primary alone has them durable. Secondaries learn the
//   commit lsn from appends and apply only committed records.
// - Catch-up. A secondary whose next record is below the primary's checkpoint
//   base gets a send_snapshot effect (the host streams the checkpoint), then
//   the log after it.
// - Role change: uncommitted transactions of a primary that steps down fail
//   with the retryable primary_changed error.
//
// - Amnesia (a replica whose damaged log or checkpoint was moved aside, its
//   promised term intact). It may have acknowledged records it no longer
//   holds, so its log must not stand for them in a sync phase: it answers no
//   sync_request, and as a primary it chooses from a majority of the OTHER
//   members. It stops being amnesiac once it durably holds the current
//   primary's log through that primary's last record as of an append it
//   received after the restart (append::last): a record it acknowledged
//   before the loss came from this primary (then it is at or below that
//   last) or from an earlier one (then, if committed, it is in this
//   primary's log: no sync phase counts a log that lost records); or, as
//   primary, once its new_primary record is committed. This one rule needs
//   more of the transport than the rest: no message sent to the replica's
//   previous life may reach it after the restart (an append from before the
//   loss names an older `last`). A node's links give that (a restarted
//   process has new connections; the old ones died with it); a transport
//   that can deliver a message across a restart cannot.
//
// Failure model: crash-recover replicas that lose the unsynced tail of their
// log but keep the promised term and the durable log, or lose the whole log
// and know it (amnesia, above); message loss,
// duplication, reordering and delay; partitions. Safety holds without clocks
// (no lease is needed for it); liveness needs a primary that stays and a
// connected majority.
#pragma once

#include "protocols/replication/messages.hpp"
#include "protocols/replication/replica_log.hpp"

#include <array>
#include <map>
#include <optional>
#include <variant>
#include <vector>

namespace conclave::replication {

struct replica_config {
  /// A primary sends an empty append to a secondary it has not sent anything
  /// to for this long (commit lsn, probe of a restarted secondary).
  duration heartbeat_interval = std::chrono::milliseconds(20);
  /// A primary resends from the last acknowledged record when a secondary has
  /// records in flight and acknowledged nothing for this long.
  duration retransmit_timeout = std::chrono::milliseconds(50);
  /// Syncing: resend sync/fetch requests after this long without an answer;
  /// after three fetch timeouts, collect the replies again.
  duration sync_retry = std::chrono::milliseconds(50);
  /// A snapshot (checkpoint stream) not acknowledged within this long is sent
  /// again (primary), or asked for again (syncing primary).
  duration snapshot_retry = std::chrono::milliseconds(500);
  /// Most bytes (entry_bytes) and records in one append. A fetch_reply (the
  /// sync phase's bulk transfer, one request at a time) carries up to
  /// max_inflight_bytes instead.
  uint64_t max_batch_bytes = 64 * 1024;
  size_t max_batch_records = 256;
  /// Per secondary: most bytes shipped but not yet acknowledged. Bounds what a
  /// slow secondary costs the primary in memory and bandwidth.
  uint64_t max_inflight_bytes = 1024 * 1024;
  /// Only for the simulator's meta-test, which shows the checkers can fail:
  /// skip the sync phase (serve at once from the primary's own log).
  bool unsafe_skip_sync = false;
  /// Only for the simulator's meta-test of flow control: ship to a secondary
  /// whatever it lacks, ignoring max_inflight_bytes.
  bool unsafe_ignore_window = false;
};

/// What a restarted replica recovered from its disk. `entries` are the durable
/// records after the checkpoint at (base, base_term); the host applied the
/// checkpoint, and applies the log after it only when apply_through says so.
struct recovered_state {
  term promised;
  lsn base;
  term base_term;
  std::vector<entry> entries;
  /// The replica lost its log or checkpoint (damaged files moved aside): it may
  /// have acknowledged records it no longer holds. See replica_core::amnesiac().
  bool amnesiac = false;
};

// -- effects -------------------------------------------------------------------

/// Make `t` durable (the highest term promised) before sending any message of
/// this batch.
struct persist_term {
  term t;
};
/// Append these records to the log (after any earlier truncation of the batch).
struct append_records {
  std::vector<entry> entries;
};
/// Remove every record after `after` from the log, durably.
struct truncate_after {
  lsn after;
};
/// The records through `through` are committed: apply them (reads may see them).
struct apply_through {
  lsn through;
};
/// A client transaction is acknowledged at `at`.
struct commit_acked {
  txn_ref txn;
  lsn at;
  commit_mode mode = commit_mode::strong;
};
/// A client transaction failed; retry on `primary_hint` (no_node: unknown).
struct txn_failed {
  txn_ref txn;
  errc reason = errc::primary_changed;
  node_id primary_hint;
};
/// Stream the checkpoint at (at, at_term) to `to`, whose host then calls
/// snapshot_offered() on its core.
struct send_snapshot {
  node_id to;
  lsn at;
  term at_term;
};
/// The sync phase ended: the log was chosen through `chosen`, the new_primary
/// record is at `new_primary_at` and committed; client transactions are served.
struct sync_finished {
  term t;
  lsn chosen;
  lsn new_primary_at;
  duration took;
};

using effect = std::variant<persist_term, append_records, truncate_after, apply_through,
                            commit_acked, txn_failed, send_snapshot, sync_finished>;

struct outgoing {
  node_id to;
  message msg;
};

/// Why an input was dropped (counters).
enum class drop_reason : uint8_t {
  non_member = 0,
  stale_term,
  lsn_gap,    ///< records not contiguous, or terms out of order
  unexpected, ///< a reply nobody asked for, a message for another role
  no_match,   ///< append whose prev this log does not hold (answered)
  count_
};

std::string_view to_string(drop_reason r);

/// Counters of one core; hosts export them, tests read them.
struct replica_stats {
  std::array<uint64_t, message_type_count> sent{};
  std::array<uint64_t, message_type_count> received{};
  std::array<uint64_t, static_cast<size_t>(drop_reason::count_)> dropped{};
  uint64_t records_shipped = 0;
  uint64_t bytes_shipped = 0;
  /// The most bytes ever in flight to one secondary (shipped in appends and
  /// not yet acknowledged), measured after each append: flow control keeps it
  /// within max_inflight_bytes plus one batch.
  uint64_t peak_inflight_bytes = 0;
  /// The largest record ever shipped in an append: a batch holds at least
  /// one record, so one larger than max_batch_bytes ships alone.
  uint64_t largest_record_bytes = 0;
  uint64_t snapshots_sent = 0;
  uint64_t syncs_started = 0;
  uint64_t syncs_finished = 0;
  uint64_t commits_acked = 0;
  uint64_t txns_failed = 0;
  uint64_t records_truncated = 0;
  uint64_t step_downs = 0;
  /// Sync requests left unanswered while amnesiac.
  uint64_t syncs_withheld = 0;

  uint64_t dropped_for(drop_reason r) const { return dropped[static_cast<size_t>(r)]; }
};

/// How far one secondary is behind the primary.
struct peer_lag {
  node_id peer;
  /// Records of the primary's log not yet durable on the peer, and their bytes.
  uint64_t records = 0;
  uint64_t bytes = 0;
  /// Shipped and not yet acknowledged.
  uint64_t inflight_bytes = 0;
  /// Since when the peer has been behind (meaningful when records > 0).
  timestamp behind_since{0};
  bool snapshot_pending = false;
};

class replica_core {
public:
  /// `members`: every member's id, this one included. `recovered`: what the
  /// replica's disk held (empty for a new replica).
  replica_core(node_id self, std::vector<node_id> members, replica_config cfg = {},
               recovered_state recovered = {});

  // -- inputs -----------------------------------------------------------------

  /// The election made this node the acting leader of term t (t.leader must be
  /// this node and t higher than every promised term): start the sync phase.
  /// Returns false (and changes nothing) otherwise.
  bool become_primary(const term& t, timestamp now);
  /// The election says this node no longer acts as leader (lease lost,
  /// resigned): fail the uncommitted transactions, become a secondary.
  void step_down(timestamp now);
  /// A message from a peer.
  void handle(const message& m, timestamp now);
  /// Primary: appends a client transaction. It ships with the next flush()
  /// (or any later input), so that several proposals go out as one batch.
  /// Returns the record's lsn, or not_primary / syncing.
  std::variant<lsn, errc> propose(txn_ref txn, std::string payload, commit_mode mode,
                                  timestamp now);
  /// Primary: ships what the secondaries' windows allow.
  void flush(timestamp now);
  /// The host made the log durable through `through` (clamped to the log).
  void log_durable(lsn through, timestamp now);
  /// `from` streamed its checkpoint at (at, at_term) under term t. Returns
  /// true if this core takes it: the host must then replace its state and log
  /// with it (the log is now empty after `at`). False: discard it (stale, or
  /// this log holds the record at (at, at_term) already, and apply_through
  /// applies from the log instead: durable records after it are kept).
  bool snapshot_offered(node_id from, const term& t, lsn at, const term& at_term,
                        timestamp now);
  /// The host wrote a checkpoint through `through` (<= commit_lsn()) and may
  /// drop the log records it covers.
  void checkpointed(lsn through);
  /// Timer: resends, heartbeats, sync retries due at `now`.
  void tick(timestamp now);

  // -- outputs ----------------------------------------------------------------

  std::vector<effect>& effects() { return effects_; }
  std::vector<outgoing>& outbox() { return outbox_; }
  std::optional<timestamp> next_deadline() const;

  // -- state ------------------------------------------------------------------

  node_id id() const { return self_; }
  role current_role() const { return role_; }
  /// Primary and sync phase finished: client transactions are served.
  bool serving() const { return role_ == role::primary && serving_; }
  /// The highest term promised (the current primary's, if known).
  const term& promised() const { return promised_; }
  /// The primary this replica follows or is, as far as it knows.
  node_id primary_hint() const { return promised_.leader; }
  const replica_log& log() const { return log_; }
  /// Highest record known committed (= applied: apply_through went this far).
  lsn commit_lsn() const { return commit_; }
  lsn durable_lsn() const { return durable_; }
  /// Secondary: the commit lsn the primary last announced (reads say how far
  /// behind they are with known_primary_commit() - commit_lsn()).
  lsn known_primary_commit() const { return primary_commit_; }
  const std::vector<node_id>& members() const { return members_; }
  size_t majority() const { return members_.size() / 2 + 1; }
  const replica_stats& stats() const { return stats_; }
  /// The log was lost and is not yet rebuilt from a primary (recovered_state::
  /// amnesiac); the host keeps a durable mark while this is true.
  bool amnesiac() const { return amnesiac_; }
  /// Primary: lag of every secondary.
  std::vector<peer_lag> lag() const;

private:
  struct peer_state {
    node_id id;
    // sync phase
    bool replied = false;
    lsn last;
    term last_term;
    // replication (primary)
    lsn next; ///< next record to ship
    /// Believed to match our log through here: starts at the record before
    /// new_primary, raised by acknowledgements, lowered by rejections. Flow
    /// control counts the bytes in (matched, next) as in flight.
    lsn matched;
    lsn durable; ///< acknowledged durable and matching through here
    timestamp last_sent{0};
    timestamp last_progress{0};
    timestamp behind_since{0};
    bool snapshot_pending = false;
    lsn snapshot_at; ///< the checkpoint lsn of the pending snapshot
    timestamp snapshot_deadline{0};
  };

  struct pending_txn {
    txn_ref txn;
    commit_mode mode;
    bool acked = false;
  };

  // -- per role -----------------------------------------------------------------

  void step_secondary(const message& m, timestamp now);
  void step_syncing(const message& m, timestamp now);
  void step_primary(const message& m, timestamp now);

  // -- shared -------------------------------------------------------------------

  /// Promises t (> promised_): persists it, steps down if leading.
  void observe_higher(const term& t, timestamp now);
  void become_secondary(timestamp now);
  void send(node_id to, message m);
  void drop(drop_reason r) { ++stats_.dropped[static_cast<size_t>(r)]; }
  peer_state* peer(node_id id);
  static peer_state fresh_peer(node_id id);
  /// Appends records to log_ and emits one append_records effect.
  void append_local(std::vector<entry> entries);
  /// Truncates log_ after `after`, emits the effect, lowers durable_.
  void truncate_local(lsn after);
  void advance_commit(lsn to);
  /// Serves a fetch_request (any role).
  void on_fetch_request(const fetch_request& m, timestamp now);
  /// Checks that records are contiguous after `prev` and their terms ordered.
  bool well_formed(lsn prev, const term& prev_term, const std::vector<entry>& es,
                   const term& t) const;

  // -- secondary ----------------------------------------------------------------

  void on_append(const append& m, timestamp now);
  void send_ack(timestamp now);

  // -- sync phase ---------------------------------------------------------------

  void start_sync(timestamp now);
  void maybe_choose(timestamp now);
  void request_fetch(timestamp now);
  void on_fetch_reply(const fetch_reply& m, timestamp now);
  void finish_sync(timestamp now);

  // -- primary ------------------------------------------------------------------

  void on_append_reply(const append_reply& m, timestamp now);
  void replicate(peer_state& p, timestamp now);
  void update_commit(timestamp now);
  void ack_weak();
  void fail_pending();
  /// Ends amnesia once the log is rebuilt (see amnesiac()).
  void check_healed();

  node_id self_;
  std::vector<node_id> members_;
  replica_config cfg_;

  role role_ = role::secondary;
  term promised_;
  replica_log log_;
  lsn durable_;
  lsn commit_;
  lsn primary_commit_;
  /// Secondary: our log matches the current primary's through here (this term).
  lsn match_hi_;

  std::vector<peer_state> peers_;
  bool amnesiac_ = false;
  /// Amnesiac secondary: the highest `last` of the current primary's appends
  /// (0: none received in this term yet).
  lsn heal_target_;

  // sync phase
  timestamp sync_started_{0};
  timestamp sync_retry_at_{0};
  bool chosen_ready_ = false;
  lsn chosen_;
  term chosen_term_;
  node_id fetch_source_;
  lsn fetch_next_;
  unsigned fetch_timeouts_ = 0;

  // primary
  bool serving_ = false;
  lsn new_primary_at_;
  std::map<uint64_t, pending_txn> pending_; ///< by lsn

  std::vector<effect> effects_;
  std::vector<outgoing> outbox_;
  replica_stats stats_;
};

} // namespace conclave::replication
