// A whole transaction as one message (op_batch → batch_result): hosts run it
// atomically and answer once, instead of one request per operation.
//
// Order of execution inside a host, all in one transaction:
//   1. begin one, unless `txn` names an open transaction of the caller;
//   2. every check, in order: the key's latest committed value is read with an
//      Update lock (so no other writer can change it until this transaction
//      ends) and compared; the first check that does not hold aborts the
//      transaction and is reported in batch_result (not an error);
//   3. every operation, in order (their `txn` field is ignored: the batch's
//      transaction is used); an operation that waits for a lock parks the
//      batch until the lock is granted or its timeout passes;
//   4. commit if asked (the answer then waits for durability in strong mode,
//      like commit_atom).
// Any error (an operation's, the lock timeout, the commit's) aborts the
// transaction: nothing of the batch is written and the caller gets the error.
//
// Groups (optional): `groups` splits the checks and the operations, in order,
// into independent items (e.g. the outcomes of several jobs). Then a check
// that does not hold fails only its group: the group's remaining checks and
// all its operations are skipped (their results are empty), it is listed in
// batch_result::failed_groups, and the other groups run and commit as usual.
// Checks still all run first, so every check's Update lock is held before
// any operation writes.
// A batch without `commit` leaves its transaction open for the caller's next
// batch, commit_atom or abort_atom.
//
// The pure parts live here so both hosts (store_actor over state_manager,
// store_host over the store core) run the same steps.
#pragma once

#include "protocols/store/operation.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conclave::store {

/// A condition the batch checks before its operations.
enum class check_kind : uint8_t {
  /// The key holds exactly `value`.
  equals = 0,
  /// The key is absent.
  absent = 1,
  /// The key is absent or holds a value that compares ≤ `value` as bytes
  /// (for fencing tokens encoded big-endian: "my term ≥ the recorded one").
  at_most = 2,
};

struct batch_check {
  std::string collection;
  std::string key;
  check_kind kind = check_kind::equals;
  std::string value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_check& x) {
  return f(caf::meta::type_name("batch_check"), x.collection, x.key, x.kind, x.value);
}

/// One independent item of a grouped batch: its next `checks` checks and its
/// next `ops` operations.
struct batch_group {
  uint32_t checks = 0;
  uint32_t ops = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_group& x) {
  return f(caf::meta::type_name("batch_group"), x.checks, x.ops);
}

struct op_batch {
  /// The transaction to continue; 0: the host begins one.
  txn_id txn;
  std::vector<batch_check> checks;
  std::vector<op_request> ops;
  /// Commit once every operation succeeded.
  bool commit = false;
  /// Empty: one item (a failed check aborts the batch). Otherwise the items,
  /// whose counts must add up to checks.size() and ops.size().
  std::vector<batch_group> groups;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_batch& x) {
  return f(caf::meta::type_name("op_batch"), x.txn, x.checks, x.ops, x.commit, x.groups);
}

/// Whether a batch's groups (if any) cover exactly its checks and operations.
bool groups_valid(const op_batch& b);

struct batch_result {
  /// The batch's transaction (aborted if a check failed, committed if asked).
  txn_id txn;
  /// 0: every check held; i > 0: check i-1 failed (transaction aborted,
  /// no operation ran, `results` empty).
  uint32_t failed_check = 0;
  /// One per operation, in order.
  std::vector<op_result> results;
  /// The commit's lsn (0: not committed, or nothing changed).
  uint64_t lsn = 0;
  /// Grouped batches: the groups (indexes, ascending) whose check failed.
  std::vector<uint32_t> failed_groups;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_result& x) {
  return f(caf::meta::type_name("batch_result"), x.txn, x.failed_check, x.results, x.lsn,
           x.failed_groups);
}

/// Whether a check holds, given what its try_get returned.
bool check_holds(const batch_check& c, const op_result& read);

/// A batch being run (both hosts drive it): the requests in order (one
/// try_get with an Update lock per check, then the operations); feed each
/// request's result to `accept`, which says whether to go on.
class batch_run {
public:
  batch_run(op_batch b, txn_id t);

  txn_id txn() const { return result_.txn; }
  bool commit_requested() const { return commit_; }
  /// True once every request ran (or a check failed).
  bool finished() const { return next_ >= size() || result_.failed_check; }
  /// The request to run next (valid while !finished()).
  const op_request& next() const {
    return next_ < reads_.size() ? reads_[next_] : ops_[next_ - reads_.size()];
  }
  /// The same, for store_core::execute_consuming() (the run never needs a
  /// completed request again).
  op_request& next() {
    return next_ < reads_.size() ? reads_[next_] : ops_[next_ - reads_.size()];
  }
  /// Takes the result of next(); false if a check failed and aborts the batch
  /// (then finished()). In a grouped batch a failed check skips its group.
  bool accept(op_result r);
  bool check_failed() const { return result_.failed_check != 0; }
  /// The answer (moves it out).
  batch_result take() { return std::move(result_); }
  void set_lsn(uint64_t l) { result_.lsn = l; }

private:
  /// Moves next_ past the requests of failed groups (empty results for
  /// their operations).
  void skip_failed();

  std::vector<batch_check> checks_;
  /// Requests run in this order: the checks' reads, then the operations.
  std::vector<op_request> reads_;
  std::vector<op_request> ops_;
  size_t size() const { return reads_.size() + ops_.size(); }
  /// Grouped: the group of each request; whether each group failed.
  std::vector<uint32_t> group_of_;
  std::vector<bool> group_failed_;
  size_t next_ = 0;
  bool commit_ = false;
  batch_result result_;
};

} // namespace conclave::store
