// Interactive transactions over the client library: read, decide, write,
// commit, with optimistic concurrency control.
//
// A replica set's transaction is one request (messages.hpp, txn_request):
// its ops apply together at one lsn, and its conditions (expect_value,
// expect_absent) are evaluated there. An interactive transaction is built on
// that: its reads go to the primary at once (kv_client::get) and are
// remembered; its writes stay in the client until commit; commit sends one
// txn_request whose first ops are a condition per key read ("still holds the
// value I read", or "still absent") followed by the writes in the order they
// were made. The primary applies all of it at one lsn or none of it: if any
// key read has changed since, the commit changes nothing and answers
// condition_failed, a conflict, and the caller runs the transaction again
// (run_transaction does).
//
// Guarantee: a committed interactive transaction is serializable at its
// commit lsn. Every value it read equals the value at that lsn and its writes
// apply at that lsn, so its effect is that of running it, with the same
// reads, alone at that point. This holds for any interleaving with other
// clients (read-modify-write loses no update; write skew is refused because
// both keys read are conditions). Comparing values, not versions, accepts a
// key that changed and changed back (A, B, A); that is still serializable,
// since the transaction's decisions depended only on the values it saw.
//
// What it does not give:
// - Reads inside a transaction are not one snapshot. Two reads at different
//   times may see a state that never existed as a whole (a before another
//   client's transaction, b after it); the commit then fails, but code
//   between the reads and the commit must tolerate such values (not crash,
//   not act outside the store on them).
// - Queue ops are writes: an enqueue is applied at commit; a dequeue cannot
//   be read before commit (use kv_client::dequeue). A transaction with an
//   enqueue is not idempotent (client.hpp): after a lost answer it is
//   answered outcome_unknown, never re-run.
// - A read-only transaction still commits (its conditions, a record that
//   changes nothing) to check that its reads were consistent; skip commit()
//   if any recent committed values will do.
// - No locks are held: a hot key under heavy contention can keep conflicting.
//   run_transaction gives up after max_attempts.
//
// A commit whose first attempt's outcome is unknown and whose retry fails a
// condition is answered outcome_unknown by the client library (client.hpp):
// it cannot tell "someone else changed a key I read" from "my first attempt
// committed, changing it". run_transaction never re-runs after it.
#pragma once

#include "actors/replication/client.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conclave::replication {

/// The pure part: what a transaction read and wrote, and the commit request
/// made of them. No I/O.
class txn_buffer {
public:
  using value = std::optional<std::string>;

  /// What the transaction sees for a key without asking the store: its own
  /// last write (nullopt inside: removed), else its first read; nullopt when
  /// it has neither and must read.
  std::optional<value> local(const std::string& collection, const std::string& key) const;

  /// Records a value read from the store. The first read of a key is kept
  /// (later reads are answered by local()), so commit checks what the
  /// transaction first saw.
  void record_read(const std::string& collection, const std::string& key, value v);

  void put(const std::string& collection, const std::string& key, std::string v);
  void remove(const std::string& collection, const std::string& key);
  void enqueue(const std::string& queue, std::string v);

  /// Conditions for every key read (in key order), then the writes in the
  /// order they were made. Strong.
  txn_request commit_request() const;

  size_t reads() const { return read_.size(); }
  size_t writes() const { return writes_.size(); }

private:
  using slot = std::pair<std::string, std::string>;
  std::map<slot, value> read_;
  std::map<slot, value> written_;
  std::vector<txn_op> writes_;
};

/// One interactive transaction on a kv_client (blocking; for threads).
/// Use it once: begin, get/put/remove/enqueue, commit.
class interactive_txn {
public:
  explicit interactive_txn(kv_client& kv) : kv_(kv) {}

  /// The key's value as this transaction sees it: its own write, else what
  /// it read before, else a read at the primary (code != ok: the read failed
  /// and the transaction cannot commit).
  read_result get(const std::string& collection, const std::string& key);

  void put(const std::string& collection, const std::string& key, std::string v) {
    buf_.put(collection, key, std::move(v));
  }
  void remove(const std::string& collection, const std::string& key) {
    buf_.remove(collection, key);
  }
  void enqueue(const std::string& queue, std::string v) {
    buf_.enqueue(queue, std::move(v));
  }

  /// Sends the commit. ok: committed at .at. condition_failed: a key read
  /// has changed (a conflict; nothing written). A failed read earlier:
  /// that read's code, nothing sent. Nothing read or written: ok, nothing
  /// sent. Other codes as for kv_client::transact.
  txn_result commit();

  const txn_buffer& buffer() const { return buf_; }

private:
  kv_client& kv_;
  txn_buffer buf_;
  errc read_failed_ = errc::ok;
};

struct run_options {
  /// Runs of the function in all (conflicts make it run again).
  int max_attempts = 10;
};

/// What run_transaction did: the last commit's result, how many times the
/// function ran, and whether the function abandoned the transaction.
struct run_result {
  txn_result result;
  int attempts = 0;
  bool abandoned = false;
};

/// Runs fn on a fresh interactive_txn and commits, again while the commit
/// answers condition_failed (up to max_attempts runs; after the last, the
/// result is that condition_failed). fn returns false to abandon the
/// transaction: nothing is sent, `abandoned` is set. A read that failed
/// inside fn ends it with that read's code. Any other commit result ends it,
/// outcome_unknown and timeout included: those are never re-run.
run_result run_transaction(kv_client& kv, const std::function<bool(interactive_txn&)>& fn,
                           run_options opts = {});

} // namespace conclave::replication
