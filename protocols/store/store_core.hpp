// The transactional core of the reliable collections store (docs/patterns.md,
// "Reliable Collections"): named dictionaries and FIFO queues of byte strings,
// multi-version state, transactions under strict two-phase locking.
//
// Guarantees
// - Atomicity: a transaction's changes become one commit record with one lsn
//   and are applied together, or not at all (abort, or a crash before the
//   record is durable).
// - Snapshot isolation: a transaction sees the state committed when it began
//   (its snapshot lsn), across every collection. count and enumerate always
//   read the snapshot; try_get/contains do when asked (read_mode::snapshot).
// - Repeatable read: try_get/contains in read_mode::repeatable (the default)
//   take a Shared lock (read_mode::update: an Update lock) on the row and read
//   the latest committed value; nobody can change it until this transaction
//   ends.
// - Writes take Exclusive row locks and act on the latest committed value, so
//   no update is lost and try_update's comparison is exact.
// - Queues: one transaction at a time holds the dequeue lock (peek and
//   dequeue), another the enqueue lock; a peek/dequeue that finds the queue
//   empty also takes the enqueue lock, so nothing can slip in ahead of what it
//   saw. Items leave in the order their enqueues committed: strict FIFO.
// - Read-your-writes in every operation. A finished transaction is rejected
//   with errc::transaction_finished.
// - Locks are released when commit() returns, before the host has made the
//   record durable (early lock release). A transaction that read such data
//   and writes commits with a higher lsn, so it can never be durable without
//   it. A read-only transaction logs nothing, so that argument does not cover
//   it: observed_through() tells the host which lsn must be durable before
//   the read-only commit may be acknowledged (docs/design/store.md, "Durability").
// - Checkpoints can be encoded in steps (begin_checkpoint, encode_step) with
//   commits in between; the image is the state at the lsn where it began.
// - Queue operations cost O(1) (queue_count O(log n)), however many items one
//   transaction dequeues: the items a transaction took are always the run of
//   sequence numbers starting at the queue's head, because it holds the
//   dequeue lock.
//
// Failure model: the core itself never fails except on bad input. It does no
// I/O and reads no clock: hosts pass deadlines and `now`, log the records that
// commit() and ensure_collection() return, and replay them with apply().
//
// Waiting: an operation that needs a lock that is not free returns
// op_result::waiting and changes nothing. The host parks it; when
// take_woken() lists the transaction the host runs the same request again,
// when expire() lists it the operation failed with errc::lock_timeout.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/lock_manager.hpp"
#include "protocols/store/log_record.hpp"
#include "protocols/store/operation.hpp"
#include "protocols/store/version_list.hpp"

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace conclave::store {

struct core_limits {
  size_t max_key_bytes = 4096;
  /// The pattern recommends items below 80 KB; larger ones are refused.
  size_t max_value_bytes = 1u << 20;
  size_t max_name_bytes = 256;
  /// Largest commit record body (tests lower it); above, commit fails with
  /// transaction_too_large. Never above max_record_body, which the log's
  /// decoder enforces.
  uint64_t max_record_body = store::max_record_body;
};

class store_core {
public:
  explicit store_core(core_limits limits = {}) : limits_(limits) {}

  const core_limits& limits() const { return limits_; }

  // -- collections ----------------------------------------------------------

  /// Finds a collection by name.
  std::optional<collection_info> find_collection(std::string_view name) const;
  /// The kind of the collection of that name, if it exists: what
  /// find_collection tells without copying the names and types (the
  /// replicas' apply path asks it for every op).
  std::optional<collection_kind> collection_kind_of(std::string_view name) const;
  bool has_collection(std::string_view name) const { return names_.count(name) != 0; }

  /// Returns the collection of that name after checking kind and types, or
  /// creates it. A creation returns the create_collection record (already
  /// applied) for the host to log; an existing collection returns no record.
  result<std::optional<log_record>> ensure_collection(const std::string& name,
                                                      collection_kind kind,
                                                      const std::string& key_type,
                                                      const std::string& value_type);

  std::vector<collection_info> collections() const;

  // -- transactions ---------------------------------------------------------

  /// Starts a transaction whose snapshot is everything committed so far.
  txn_id begin();

  /// Runs one operation. `deadline` bounds a lock wait.
  result<op_result> execute(const op_request& req, timestamp deadline);

  /// execute() for a caller that runs `req` once: a dictionary write that
  /// completes (does not wait for a lock) moves req.key and req.value into
  /// the transaction instead of copying them. A waiting request keeps both
  /// and may be run again.
  result<op_result> execute_consuming(op_request& req, timestamp deadline);

  /// Commits: assigns the next lsn, applies, releases the locks. Returns the
  /// record to log; a transaction that changed nothing returns a record with
  /// lsn 0 that needs no logging.
  result<log_record> commit(txn_id txn);

  /// Discards the transaction's changes and releases its locks.
  result<void> abort(txn_id txn);

  /// Transactions whose waiting operation may now be run again.
  std::vector<txn_id> take_woken() { return locks_.take_granted(); }

  /// Transactions whose waiting operation timed out (lock_timeout).
  std::vector<txn_id> expire(timestamp now) { return locks_.expire(now); }

  std::optional<timestamp> next_deadline() const { return locks_.next_deadline(); }

  /// The newest lsn whose effects the transaction's operations may have seen
  /// (last_lsn() when its latest operation ran; 0 if it ran none). A read-only
  /// commit must not be acknowledged before this lsn is durable, or a crash
  /// could take back a value the reader returned. Call before commit().
  lsn observed_through(txn_id txn) const;

  bool is_active(txn_id txn) const { return txns_.count(txn.value) > 0; }
  size_t active_transactions() const { return txns_.size(); }
  const lock_manager& locks() const { return locks_; }

  // -- log and checkpoints --------------------------------------------------

  /// Applies a record read from the log (recovery). Its lsn must follow
  /// last_lsn(); anything else is corrupt_data.
  result<void> apply(const log_record& r);

  /// The lsn of the last applied record.
  store::lsn last_lsn() const { return last_lsn_; }
  store::term current_term() const { return term_; }
  void set_term(store::term t) { term_ = t; }

  /// Encodes the latest committed state (only the newest version of each
  /// item) as a checkpoint image, stamped with last_lsn(). See docs/design/store.md.
  std::string encode_checkpoint() const;

  /// Replaces the whole state with a checkpoint image. Only valid on a core
  /// without transactions. corrupt_data if the image fails its checksum.
  result<void> load_checkpoint(std::string_view image);

  /// Drops versions no active snapshot can see any more. Incremental: it
  /// visits the rows that were left with old versions or a tombstone when
  /// they were written (a commit prunes the rows it writes at once, so only
  /// those an older snapshot still needed), not every row; after more than
  /// garbage_list_cap such rows between two calls it walks every row once.
  void collect_garbage();

  /// Rows listed for collect_garbage() (tests and figures).
  size_t garbage_listed() const { return garbage_.size(); }
  /// Row versions and tombstones held, over every row: O(rows), for tests.
  size_t versions_held() const;
  static constexpr size_t garbage_list_cap = 16384;

  // -- checkpoints in steps ---------------------------------------------------

  /// A checkpoint image of the state at one lsn, encoded in steps so that a
  /// host can release its lock between them: begin_checkpoint(), then
  /// encode_step() until it returns true (any commits may run in between),
  /// then end_checkpoint() and take_image(). Like a transaction's snapshot,
  /// it keeps the versions it still needs. The image equals what
  /// encode_checkpoint() returned at begin_checkpoint().
  class checkpoint_encoder {
  public:
    lsn at() const { return at_; }
    /// The finished image with its checksum (after the last step; needs no
    /// lock: it touches only the encoder).
    std::string take_image();

  private:
    friend class store_core;
    lsn at_;
    std::vector<collection_id> ids_;
    // Queues: head_seq and next_seq at `at_`.
    std::map<collection_id, std::pair<uint64_t, uint64_t>> queue_bounds_;
    // One piece per step, joined by take_image(): a single growing string
    // would copy all of it under the lock whenever it reallocates.
    std::vector<std::string> pieces_;
    size_t index_ = 0; // into ids_
    bool in_collection_ = false;
    size_t count_piece_ = 0; // where the dictionary's item count is
    size_t count_offset_ = 0;
    uint64_t count_ = 0;
    std::string last_key_; // dictionaries: the last row passed
    bool has_last_ = false;
    uint64_t next_seq_ = 0;   // queues: the next item to encode
    bool registered_ = false; // holds a snapshot in snapshots_
  };

  /// Starts a checkpoint of the state at last_lsn(): O(collections).
  checkpoint_encoder begin_checkpoint();
  /// Encodes up to about `max_items` rows or items (and `max_bytes` bytes),
  /// dropping old versions of the rows it passes that no snapshot needs.
  /// True when the image is complete.
  bool encode_step(checkpoint_encoder& e, size_t max_items, size_t max_bytes);
  /// Releases the encoder's snapshot (also for an abandoned encoder).
  void end_checkpoint(checkpoint_encoder& e);

private:
  using version = version_list::version;
  using row_map = std::map<std::string, version_list>;
  struct queue_item {
    uint64_t seq = 0;
    lsn enqueued;
    lsn dequeued; // 0 while in the queue
    std::string value;
  };
  struct collection {
    collection_info info;
    row_map rows;
    std::deque<queue_item> items; // consecutive seqs, oldest first
    uint64_t head_seq = 1;        // first item not dequeued
    uint64_t next_seq = 1;        // seq of the next enqueue
  };
  struct pending_queue {
    // Committed items taken: seqs head_seq .. head_seq + taken - 1 (the
    // dequeue lock keeps anyone else from moving the head meanwhile).
    uint64_t taken = 0;
    std::deque<std::string> enqueued; // own items not yet taken back
  };
  /// Orders (collection, key) pairs whatever the key's string type.
  struct write_key_less {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      if (a.first != b.first)
        return a.first < b.first;
      return std::string_view{a.second} < std::string_view{b.second};
    }
  };
  struct txn_state {
    lsn snapshot;
    lsn observed; // last_lsn_ when the latest operation ran
    /// Own writes by (collection, key); looked up with a string_view key, so
    /// a read or a scan copies no key.
    std::map<std::pair<collection_id, std::string>, std::optional<std::string>,
             write_key_less>
        writes;
    std::map<collection_id, pending_queue> queues;
  };

  result<txn_state*> find_txn(txn_id txn);
  result<collection*> find_for(const op_request& req);
  result<op_result> execute(const op_request& req, timestamp deadline,
                            op_request* movable);
  /// `movable`: req itself when the caller lets it go (else null: its key
  /// and value are copied); a write moves the key and value out of it.
  result<op_result> execute_dictionary(txn_state& t, collection& c, const op_request& req,
                                       timestamp deadline, op_request* movable);
  result<op_result> execute_queue(txn_state& t, collection& c, const op_request& req,
                                  timestamp deadline);
  /// A row a record wrote: where it is, for the pruning that follows.
  struct touched_row {
    collection* c;
    row_map::iterator row;
  };
  /// Applies the ops; the rows written are in touched_ afterwards.
  void apply_ops(const log_record& r);
  /// Validates and applies a record; touched_ as apply_ops.
  result<void> apply_record(const log_record& r);
  lsn min_snapshot() const;
  void prune_row(collection& c, const std::string& key, lsn horizon);
  /// Prunes one row (may erase it); true if it still holds old versions or a
  /// tombstone (a snapshot older than them is open).
  bool prune_row(collection& c, row_map::iterator r, lsn horizon);
  /// Lists a row for collect_garbage() (or gives up the list past its cap).
  void list_garbage(collection_id c, const std::string& key);
  void collect_all_garbage(lsn horizon);
  void prune_queue(collection& c, lsn horizon);
  void finish(txn_id txn);
  /// The item with sequence number `seq` still in c.items, or null.
  static queue_item* item_at(collection& c, uint64_t seq);

  core_limits limits_;
  lock_manager locks_;
  std::map<collection_id, collection> collections_;
  std::map<std::string, collection_id, std::less<>> names_;
  collection_id next_collection_ = 1;
  std::unordered_map<uint64_t, txn_state> txns_;
  std::multiset<uint64_t> snapshots_;
  uint64_t next_txn_ = 1;
  /// Rows written by the last applied record (reused, not reallocated).
  std::vector<touched_row> touched_;
  /// Rows that may hold versions nobody needs (collect_garbage()), and
  /// whether the list overflowed (then every row is walked once).
  std::vector<std::pair<collection_id, std::string>> garbage_;
  bool garbage_overflow_ = false;
  lsn last_lsn_;
  store::term term_{1};
};

} // namespace conclave::store
