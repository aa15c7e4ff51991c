// wal: the write-ahead log of a store, in segment files
// DIR/log/seg-<lsn of the first record, 20 digits>.wal, each a sequence of
// log record frames (protocols/store/log_record.hpp).
//
// Guarantees
// - Records are appended in lsn order (each append's lsn is the previous + 1)
//   and written by one leader at a time: the thread that writes the queued
//   records and syncs them. A thread waiting in wait_durable() while no sync
//   is in flight leads itself (one writer's commit costs no hand-off to
//   another thread and back); records appended meanwhile queue up and the
//   next leader, one of their waiters, takes them all. The writer thread
//   leads for records nobody waits for (append without caller_waits) and
//   drains the queue on close. With group commit, a leader takes every record
//   queued, writes them with one write() per segment and makes them durable
//   with one sync; without it (the serial baseline), each record gets its own
//   write and sync.
// - Segment files grow by zero-filled steps of preallocate_bytes written with
//   the records that need the room; later records overwrite the zeros (pwrite
//   at the record offset), so most syncs persist data but no new file size.
// - wait_durable(l) and the on_durable callback report a record durable only
//   after a successful sync of its segment (and of the directory for a new
//   segment).
// - A failed write or sync is final: failure() is set, every waiter and the
//   callback learn it, later appends fail with store_failed. No retry: after
//   a failed fsync the kernel may have dropped the dirty pages.
// - open() replays the records the caller needs (lsn > after) and acts on
//   the scan's findings (log_scan.hpp): a torn tail is cut, its bytes moved
//   to DIR/log/lost+found/ first; corruption in the middle, or needed records
//   missing, fails the open with corrupt_data and changes nothing, unless
//   `repair` is set: then the log is cut where the needed records stop and
//   everything after it is moved to lost+found too. Segments holding only
//   records <= after are neither read nor changed. Nothing but zero bytes
//   (empty or never written segment files after the end) is ever deleted here.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/log_record.hpp"
#include "storage/api/file_system.hpp"
#include "storage/file_util.hpp"
#include "storage/log_scan.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace conclave::store {

struct wal_options {
  /// Data directory; segments live in dir/"log".
  std::filesystem::path dir;
  /// Start a new segment once the current one is this large.
  uint64_t segment_bytes = 64u << 20;
  /// Grow segment files with zeros this far ahead of the records (0: plain
  /// appends), so that most fdatasyncs write data only, not a new file size.
  /// Recovery takes zeros running to a segment's end for its clean end.
  uint64_t preallocate_bytes = 1u << 20;
  /// false: one write + sync per record (the serial baseline).
  bool group_commit = true;
  /// fdatasync replacement (tests inject failures); empty: ::fdatasync.
  /// For the disk only: ignored when `fs` is set.
  files::sync_fn sync;
  /// Where the files are (a simulated disk in tests and simulations); empty:
  /// the disk (storage/posix_file_system.hpp) with `sync`.
  std::shared_ptr<file_system> fs;
  /// Accept the loss of corruption in the middle (the operator's `store
  /// repair`): cut there, keeping a copy, instead of refusing to open.
  bool repair = false;
  /// false: no writer thread. Queued records are written and synced only
  /// when a caller asks, on its own thread: pump(), wait_durable(), or the
  /// destructor. For a simulated disk whose syncs take virtual time (the
  /// simulator calls pump() when a sync's time is up), so that a run is
  /// deterministic.
  bool writer_thread = true;
};

/// What open() found.
struct wal_recovery {
  uint64_t records = 0;
  lsn first, last;
  /// Something was cut (a torn tail, or what a repair dropped): the bytes
  /// moved aside, why, and the files that now hold them.
  bool tail_cut = false;
  uint64_t cut_bytes = 0;
  std::string cut_reason;
  std::vector<std::filesystem::path> moved_to;
  /// Corruption in the middle: why open failed (file and byte offset), or,
  /// with `repair`, what was cut.
  std::string problem;
  /// With `repair`: valid records dropped because needed ones before them
  /// are lost.
  uint64_t dropped_records = 0;
  lsn dropped_first, dropped_last;
  /// Damage among covered records (not read for recovery unless in a segment
  /// with needed records): harmless, reported.
  std::vector<std::string> covered_damage;
};

class wal {
public:
  using replay_fn = std::function<result<void>(const log_record&)>;

  /// Opens or creates dir/log, replays every valid record with lsn > after,
  /// cuts an invalid tail, starts the writer thread. The next append must
  /// have lsn max(after, last record) + 1.
  static result<std::unique_ptr<wal>> open(wal_options opts, lsn after,
                                           const replay_fn& replay, wal_recovery& report);

  /// Writes and syncs what was appended, then stops the writer.
  ~wal();

  /// Queues an encoded record. Never waits for I/O. `caller_waits`: the
  /// caller calls wait_durable(l) next and will lead the sync itself, so the
  /// writer thread is not woken for it.
  result<void> append(lsn l, std::string frame, bool caller_waits = false);

  /// Blocks until `l` is durable (ok) or the log failed (io_failure). Writes
  /// and syncs the queued records itself when no other sync is in flight.
  result<void> wait_durable(lsn l);

  /// Without a writer thread: writes and syncs what is queued now, on this
  /// thread, unless a sync is in flight or the log failed (then nothing).
  /// With one: the same, and harmless.
  void pump();

  /// Called after each sync with the durable lsn, or once with the error
  /// that stopped the log, on the thread that led the sync (the writer thread
  /// or one in wait_durable), one call at a time and in lsn order, before the
  /// next leader starts. Set before the first append.
  void on_durable(std::function<void(lsn, std::error_code)> f);

  lsn durable_lsn() const;
  lsn appended_lsn() const;

  /// The next record starts a new segment.
  result<void> roll();

  /// Deletes the segments whose records all have lsn <= l (never the one
  /// being written).
  result<void> truncate_through(lsn l);

  std::error_code failure() const;
  /// failure() is set (lock-free; for hot paths).
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  struct stats {
    uint64_t bytes = 0, records = 0, syncs = 0;
    /// Times the writer thread woke up (useful or not): a thread that leads
    /// its own sync should not wake it at all.
    uint64_t writer_wakeups = 0;
  };
  stats get_stats() const;

  /// Tests only: stops the writer without writing what is queued, as a crash
  /// would. Waiters and the callback get io_failure.
  void crash_for_testing();

  /// Segment files, oldest first.
  std::vector<std::filesystem::path> segments() const;

private:
  struct entry {
    lsn l;
    std::string frame;
    bool roll_before = false;
  };
  struct segment {
    std::filesystem::path path;
    lsn first;
  };

  explicit wal(wal_options opts);
  result<void> scan(lsn after, const replay_fn& replay, wal_recovery& report);
  /// Moves the bytes of `seg` from `offset` on into log/lost+found (the whole
  /// file when offset is 0) and cuts the segment there.
  result<void> move_aside(const segment_scan& seg, uint64_t offset, wal_recovery& report);
  void run();
  /// The writer thread's wait is over (called with mtx_ held): it must lead
  /// for records nobody waits for, drain on close, or stop.
  bool writer_has_work() const;
  /// Takes the queue (all of it with group commit), writes and syncs it with
  /// mtx_ released, then reports. Called with `lk` held, no leader and a
  /// nonempty queue; returns with `lk` held. false: the log failed.
  bool lead(std::unique_lock<std::mutex>& lk);
  result<void> write_batch(std::vector<entry>& batch);
  result<void> open_segment(lsn first);
  result<void> sync_current();
  void fail(std::error_code err);

  wal_options opts_;
  std::filesystem::path log_dir_;
  std::shared_ptr<file_system> fs_;

  // The leader's only (leading_ hands them over under mtx_).
  std::unique_ptr<writable_file> file_;
  uint64_t segment_size_ = 0; // bytes of records in the current segment
  uint64_t zeroed_ = 0;       // file size: records, then zeros up to here

  mutable std::mutex mtx_;
  std::condition_variable work_cv_;
  std::condition_variable durable_cv_;
  std::deque<entry> queue_;
  std::vector<segment> segments_;
  bool roll_pending_ = false;
  /// A thread is writing and syncing a batch.
  bool leading_ = false;
  /// The queue holds records nobody waits for: the writer thread leads.
  bool wake_writer_ = false;
  bool stop_ = false;
  bool crashed_ = false;
  lsn appended_;
  lsn durable_;
  std::error_code failure_;
  std::atomic<bool> failed_{false}; // failure_ is set
  stats stats_;
  std::function<void(lsn, std::error_code)> on_durable_;
  std::thread writer_;
};

} // namespace conclave::store
