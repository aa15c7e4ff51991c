// state_manager: the reliable collections store of one replica (docs/patterns.md,
// "Reliable Collections"). It owns the transactional core (protocols/store),
// the write-ahead log, checkpoints and recovery of one data directory, and
// serves typed collections (collections.hpp) to threads and, through
// store_actor (actors/store), to actors.
//
// Guarantees
// - Strong mode (default): commit returns after the transaction's log record
//   is on disk (fdatasync). Concurrent commits share one fdatasync (group
//   commit). A read-only transaction's commit returns once everything its
//   reads may have seen is on disk, so no reader returns a value that a crash
//   takes back. Weak mode: commit returns once the transaction is applied; a
//   crash may lose the last commits, never part of one.
// - Every operation takes a lock timeout (default 4 s) and fails with
//   errc::lock_timeout instead of waiting forever; the transaction should then
//   be aborted (that is the deadlock detection). Timeouts are served by their
//   own thread, which never writes files, so a slow checkpoint cannot delay
//   them; a deadline past the clock's range means "no timeout".
// - Two interfaces over the same engine: blocking calls (for threads) and
//   *_async calls whose callbacks run later on another thread (for actors,
//   which must not block a worker). A callback never runs under the store's
//   lock, so it may call back into the store.
// - A failed log write or fsync stops the store: every later call fails with
//   errc::store_failed, commits in flight with errc::io_failure. Nothing is
//   retried past a failed fsync (the page cache may have dropped the data).
// - Checkpoints: after `checkpoint_log_bytes` of log (or on checkpoint()), the
//   state at the checkpoint's lsn is encoded in short steps under the store's
//   lock (operations and timeouts run in between), then written without it,
//   on the checkpoint thread, to a new checkpoint file (temp file,
//   fsync, rename, directory fsync) once everything it contains is durable;
//   then the log segments covered by the previous checkpoint are deleted (the
//   log since the previous one stays, so that a corrupt newest checkpoint can
//   fall back to it). A failed checkpoint write is reported and retried after
//   `checkpoint_retry_delay`; the log is kept and the store goes on.
// - Recovery (open): newest valid checkpoint (one that fails its checksum or
//   format is reported, set aside as *.corrupt and the previous one used; one
//   that cannot be read fails the open), then the log after it (log_scan.hpp:
//   a torn tail is cut and moved to log/lost+found; corruption before valid
//   records fails the open unless `repair`). Reported through `log` and the
//   probe; recovery() describes what was found.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/operation.hpp"
#include "protocols/store/store_core.hpp"
#include "storage/backup.hpp"
#include "storage/store_probe.hpp"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace conclave::store {

class wal;
class transaction;
template <class K, class V>
class reliable_dictionary;
template <class T>
class reliable_queue;

struct state_manager_options {
  /// Data directory (created if missing): log/ and checkpoints/ inside.
  std::filesystem::path dir;
  /// true: commit returns after fdatasync; false: before (weak mode).
  bool strong = true;
  /// false: one fdatasync per commit, one at a time (the serial baseline).
  bool group_commit = true;
  /// Lock timeout of operations that do not pass their own.
  std::chrono::milliseconds default_timeout{4000};
  /// Write a checkpoint after this many log bytes since the last one (0: only
  /// on checkpoint()).
  uint64_t checkpoint_log_bytes = 64u << 20;
  /// Log segment size.
  uint64_t segment_bytes = 64u << 20;
  /// Zeros written ahead of the log's records (wal_options::preallocate_bytes;
  /// 0: plain appends).
  uint64_t preallocate_bytes = 1u << 20;
  core_limits limits;
  /// Metrics; null: none. Must outlive the store.
  store_probe* probe = nullptr;
  /// Where recovery findings and failures are reported, one line each
  /// (default: standard error).
  std::function<void(const std::string&)> log;
  /// fdatasync replacement for fault injection in tests (default ::fdatasync).
  std::function<int(int)> sync;
  /// fdatasync of checkpoint files (and their directory) only; tests block or
  /// fail checkpoint writes with it. Empty: `sync`, else ::fdatasync.
  std::function<int(int)> checkpoint_sync;
  /// After a failed automatic checkpoint, wait this long before the next try.
  std::chrono::milliseconds checkpoint_retry_delay{10000};
  /// The clock of lock deadlines (tests: a manual clock, with
  /// state_manager::clock_advanced() after moving it). Empty: steady_clock.
  std::function<timestamp()> clock;
  /// The operator accepts the loss of corruption in the middle of the log
  /// (`conclave store repair`): the log is cut there, keeping a copy, instead
  /// of the open failing.
  bool repair = false;
};

/// What open() found on disk.
struct recovery_report {
  /// lsn of the checkpoint loaded (0: none).
  lsn checkpoint;
  /// Checkpoint files skipped because they are corrupt.
  std::vector<std::string> corrupt_checkpoints;
  uint64_t records_replayed = 0;
  lsn last;
  /// A torn or corrupt log tail was cut: how many bytes, and why.
  bool tail_cut = false;
  uint64_t cut_bytes = 0;
  std::string cut_reason;
  /// Where the cut bytes went (DIR/log/lost+found/...).
  std::vector<std::filesystem::path> moved_to;
  /// With `repair`: the corruption cut, and the valid records dropped after it.
  std::string problem;
  uint64_t dropped_records = 0;
  lsn dropped_first, dropped_last;
  std::chrono::nanoseconds duration{0};
};

class state_manager {
public:
  using op_callback = std::function<void(result<op_result>)>;
  using commit_callback = std::function<void(result<lsn>)>;

  /// Opens (recovering) or creates the store in `opts.dir`.
  static result<std::unique_ptr<state_manager>> open(state_manager_options opts);

  /// Flushes the log and stops the store's threads. Open transactions are
  /// aborted; pending callbacks get errc::store_failed.
  ~state_manager();

  state_manager(const state_manager&) = delete;
  state_manager& operator=(const state_manager&) = delete;

  // -- typed collections (collections.hpp) ----------------------------------

  /// The dictionary `name`, created on first use. wrong_type if it exists
  /// with another kind or other key/value types.
  template <class K, class V>
  result<reliable_dictionary<K, V>> dictionary(const std::string& name);

  /// The queue `name`, created on first use.
  template <class T>
  result<reliable_queue<T>> queue(const std::string& name);

  /// Starts a transaction (a move-only handle that aborts when dropped
  /// unfinished).
  transaction begin();

  // -- untyped interface ------------------------------------------------------

  result<collection_info> ensure_collection(const std::string& name, collection_kind kind,
                                            const std::string& key_type,
                                            const std::string& value_type);
  std::vector<collection_info> collections() const;

  result<txn_id> begin_txn();

  /// Runs one operation, waiting up to `timeout` for its locks (negative: the
  /// default timeout; 0: fail at once if a lock is held; beyond the clock's
  /// range, e.g. milliseconds::max(): wait as long as it takes).
  result<op_result> execute(const op_request& req, std::chrono::milliseconds timeout);
  /// Same, without blocking: `cb` runs on this thread if the operation
  /// completes at once, else later on another thread.
  void execute_async(op_request req, std::chrono::milliseconds timeout, op_callback cb);

  /// Commits; returns the lsn of the record (0 if the transaction changed
  /// nothing) once durable (strong mode) or applied (weak mode). In strong
  /// mode a read-only commit returns once everything its reads may have seen
  /// is durable (store_core::observed_through).
  result<lsn> commit(txn_id txn);
  void commit_async(txn_id txn, commit_callback cb);

  result<void> abort(txn_id txn);

  // -- maintenance --------------------------------------------------------------

  /// Writes a checkpoint now and truncates the log it covers. A failed write
  /// is returned (and counted) but does not stop the store.
  result<lsn> checkpoint();

  /// Copies the store to `backup_dir`: full (newest checkpoint + log) or
  /// incremental (the log since the previous backup in that directory).
  result<backup_info> backup(const std::filesystem::path& backup_dir, bool incremental);

  /// Rebuilds a data directory from the backups in `backup_dir` (the newest
  /// full one and the incrementals after it). `new_dir` must be empty or absent.
  static result<backup_info> restore(const std::filesystem::path& backup_dir,
                                     const std::filesystem::path& new_dir);

  const recovery_report& recovery() const { return recovery_; }
  /// Set once a log write or fsync failed.
  std::error_code failure() const;
  lsn last_lsn() const;
  lsn durable_lsn() const;
  std::chrono::milliseconds default_timeout() const { return opts_.default_timeout; }
  const std::filesystem::path& dir() const { return opts_.dir; }

  /// Tests with their own `clock`: call after moving it, so that the lock
  /// deadlines it passed expire now.
  void clock_advanced();

  /// Tests only: stops the log writer without writing what is queued, as a
  /// crash would, and makes the store refuse everything from now on.
  void crash_for_testing();

  struct stats {
    uint64_t commits = 0, aborts = 0, lock_waits = 0, lock_timeouts = 0;
    uint64_t log_bytes = 0, log_records = 0, log_syncs = 0, checkpoints = 0;
    uint64_t checkpoint_failures = 0;
    size_t active_transactions = 0;
  };
  stats get_stats() const;

private:
  explicit state_manager(state_manager_options opts);

  struct parked {
    op_request req;
    timestamp deadline;
    op_callback cb;
  };
  struct commit_waiter {
    commit_callback cb;
    std::chrono::steady_clock::time_point started;
    /// A read-only commit: replies lsn 0 and counts no commit.
    bool read_only = false;
  };
  using completion = std::function<void()>;

  result<void> recover();
  /// Now on the lock-deadline clock (opts_.clock or steady_clock).
  timestamp now() const;
  /// Now on steady_clock, as a timestamp (checkpoint retries).
  static timestamp steady_now();
  timestamp deadline_in(std::chrono::milliseconds timeout) const;
  /// Re-runs parked operations that were granted their lock; returns the
  /// callbacks to run once the lock is released. Caller holds mtx_.
  void wake(std::vector<completion>& out);
  /// Runs the operation; if it must wait for a lock, parks it with the
  /// callback make_callback() returns and gives nullopt.
  std::optional<result<op_result>>
  run_or_park(op_request req, std::chrono::milliseconds timeout,
              const std::function<op_callback()>& make_callback);
  /// Commits under mtx_. A read-only transaction in strong mode sets
  /// `wait_for` to the lsn that must be durable before it is acknowledged
  /// (if that is not the case yet); with `cb`, the callback is parked until
  /// then and `wait_for` set. `caller_waits`: the caller waits for the
  /// record's durability next (wal::append).
  result<lsn> commit_locked(txn_id txn, std::vector<completion>& out, commit_callback* cb,
                            lsn& wait_for, bool caller_waits);
  void fail_parked(txn_id txn, errc why, std::vector<completion>& out);
  void durable(lsn upto, std::error_code err);
  void timer_loop();
  void checkpoint_loop();
  /// `automatic`: a failed write is retried after checkpoint_retry_delay.
  result<lsn> take_checkpoint(bool automatic);
  void report(const std::string& line) const;
  result<void> check_running(); // caller holds mtx_

  state_manager_options opts_;
  store_probe* probe_;
  recovery_report recovery_;

  mutable std::mutex mtx_;
  store_core core_;
  std::unordered_map<uint64_t, parked> parked_;
  std::unique_ptr<wal> wal_;
  std::error_code failure_;
  uint64_t log_bytes_since_checkpoint_ = 0;
  bool checkpoint_wanted_ = false;
  timestamp checkpoint_retry_at_{0}; // no automatic checkpoint before
  bool stopping_ = false;
  std::condition_variable timer_cv_;      // lock deadlines (timer thread)
  std::condition_variable checkpoint_cv_; // checkpoint_wanted_ (checkpoint thread)
  stats stats_;

  uint64_t last_synced_ = 0; // written by the log's writer thread only
  std::mutex durable_mtx_;
  std::multimap<uint64_t, commit_waiter> commit_waiters_;

  std::mutex checkpoint_mtx_; // one checkpoint or backup at a time
  lsn previous_checkpoint_;   // guarded by checkpoint_mtx_
  std::thread timer_;
  std::thread checkpointer_;
  int lock_fd_ = -1; // holds flock(DIR/LOCK) while open
};

} // namespace conclave::store

#include "storage/collections.hpp"
