// wal_log_device: a store log_device (storage/api/log_device.hpp) over the
// file write-ahead log (wal.hpp) of one directory, for a replica host that
// keeps its replicated log on disk. DIR/log holds the segments, DIR/LOCK
// keeps a second opener out (directory_in_use).
//
// Guarantees
// - append() queues the record (lsn order: each is the previous + 1) and never
//   waits for I/O; the WAL's writer thread writes what is queued and syncs it,
//   so records appended while a sync is in flight share the next one (group
//   commit).
// - sync(done) reports, once everything appended before the call is durable,
//   the lsn of the last such record (capped by a later truncate_after). It
//   completes on the thread that led the WAL's sync (the writer thread), or
//   inside sync() when nothing it covers is still unsynced, without the
//   device's lock held; it should only hand the result on (post a message).
//   A completion decided just before a truncate_after may still run while
//   that truncation does (the host caps it: replica_host.cpp, sync_cap).
// - truncate_after(at) is durable when it returns: it waits for the records in
//   flight, stops the WAL, moves every segment named after `at` and the bytes
//   after record `at` in the segment that holds it to DIR/log/truncated/
//   (newest first, each move synced, so that a crash leaves a prefix of the
//   log), cuts that segment after record `at`, syncs it and reopens the WAL.
//   Records at or below `at` are neither moved nor rewritten. The next append
//   is at + 1 (in a new segment). Syncs not completed when it starts report
//   at most `at`.
// - Methods are called by one thread at a time (the host); completions come
//   from the writer thread.
// - recover() returns the records on disk in lsn order, all durable (it
//   waits for those in flight first).
// - A failed write or sync is final, as in the WAL: every waiting and later
//   sync gets the error, appends and truncations fail with store_failed.
// - Open (recovery) follows the store's rules (log_scan.hpp): a torn tail is
//   cut and its bytes moved to DIR/log/lost+found/; corruption followed by
//   valid records refuses the open with corrupt_data and changes nothing;
//   the report's `problem` names the file and byte offset.
//
// Checkpoints (DIR/checkpoints/ckpt-<lsn>.ckpt, storage/checkpoint_file.hpp:
// magic, version, lsn, size, CRC-32C; written to a .tmp file, synced,
// renamed, directory synced; the newest two kept):
// - checkpoint(image, at) needs `at` durable; once the file is in place the
//   WAL starts a new segment and deletes the segments whose records are all
//   <= at (the checkpoint proves them redundant; nothing else is deleted).
// - install_snapshot(image, at) first writes the image durably to
//   DIR/install/checkpoints/ckpt-<at>.ckpt: that file is the commit point.
//   Then it stops the WAL, moves every segment and every older checkpoint
//   to DIR/log/replaced/ (kept, each move synced), renames the install file
//   into DIR/checkpoints/ and reopens an empty log after `at`. An open that
//   finds a complete install file finishes the install first (a crash after
//   the commit point leaves the new state; before it, the old one, and the
//   install's .tmp is removed).
// - open reads the newest checkpoint and recovers the log after its lsn. A
//   checkpoint that does not check out fails the open with corrupt_data,
//   the report's `problem` naming the file: never read as no checkpoint.
#pragma once

#include "storage/api/file_system.hpp"
#include "storage/api/log_device.hpp"
#include "storage/wal.hpp"

#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

namespace conclave::storage {

struct replica_log_options {
  /// Data directory (created if missing); the log lives in dir/"log".
  std::filesystem::path dir;
  /// Start a new segment once the current one is this large.
  uint64_t segment_bytes = 64u << 20;
  /// Zeros written ahead of the records (wal_options::preallocate_bytes).
  uint64_t preallocate_bytes = 1u << 20;
  /// fdatasync replacement (tests inject failures); empty: ::fdatasync.
  /// For the disk only: ignored when `fs` is set.
  store::files::sync_fn sync;
  /// Where the files are (a simulated disk); empty: the disk
  /// (storage/posix_file_system.hpp) with `sync`.
  std::shared_ptr<store::file_system> fs;
  /// false: no writer thread (wal_options::writer_thread): a sync completes
  /// when pump() is called, or inside the calls that wait for durability
  /// (truncate_after, install_snapshot, recover, the destructor).
  bool writer_thread = true;
};

class wal_log_device final : public store::log_device {
public:
  /// Opens (recovering) or creates the log in opts.dir. `report` says what
  /// recovery found: a cut tail and where its bytes went, or why the open
  /// failed (`problem`, with file and byte offset).
  static store::result<std::shared_ptr<wal_log_device>> open(replica_log_options opts,
                                                             store::wal_recovery& report);

  /// Writes and syncs what was appended, then stops the writer thread.
  ~wal_log_device() override;

  store::result<void> append(const store::log_record& r) override;
  void sync(sync_callback done) override;
  store::result<void> truncate_after(store::lsn at) override;
  store::result<void> checkpoint(std::string image, store::lsn at) override;
  store::result<void> install_snapshot(std::string image, store::lsn at) override;
  store::result<recovered> recover() override;

  /// Without a writer thread: writes and syncs what was appended, and
  /// completes the syncs it covers, on this thread.
  void pump();

  store::lsn appended_lsn() const;
  store::lsn durable_lsn() const;
  /// Syncs (fdatasyncs of segments) the WAL made since the last (re)open.
  uint64_t syncs() const;
  /// Truncations that removed records.
  uint64_t truncations() const;
  /// The lsn of the newest checkpoint (0: none).
  store::lsn checkpoint_lsn() const;

private:
  struct pending_sync {
    store::lsn upto;
    sync_callback done;
  };

  explicit wal_log_device(replica_log_options opts);
  store::result<void> open_wal(store::lsn after, store::wal_recovery& report,
                               std::vector<store::log_record>* records);
  /// The WAL's on_durable: completes the pending syncs it covers.
  void durable(store::lsn upto, std::error_code err);
  /// Moves the log after record `at` to log/truncated and cuts it there.
  store::result<void> cut_files(store::lsn at);
  void fail(std::error_code err);
  /// Waits for what is in flight and stops the WAL (install; truncate_after
  /// passes the lsn it read with its own bookkeeping).
  store::result<void> stop_wal();
  /// The same, once everything through `appended` is durable.
  store::result<void> stop_wal(store::lsn appended);
  /// Moves the log and older checkpoints aside and promotes the install file.
  store::result<void> finish_install(const std::filesystem::path& install_file);

  replica_log_options opts_;
  std::shared_ptr<store::file_system> fs_;
  std::unique_ptr<store::file_lock> lock_; // held while open
  std::unique_ptr<store::wal> wal_;

  mutable std::mutex mtx_;
  store::lsn appended_;
  store::lsn durable_;
  std::vector<pending_sync> pending_;
  std::error_code failure_;
  uint64_t syncs_before_ = 0; // syncs of WALs closed by truncations
  uint64_t truncations_ = 0;
  /// The records the open replayed, handed out by the first recover() if
  /// nothing changed since.
  std::vector<store::log_record> opened_records_;
  bool opened_records_valid_ = false;
  store::lsn checkpoint_lsn_;
  std::string checkpoint_image_;
};

/// Opens (recovering) or creates the replicated log of a replica in `dir`
/// (created if missing), with default options. A log corrupt before its end
/// fails with corrupt_data (wal_log_device::open reports where).
store::result<std::shared_ptr<store::log_device>>
open_replica_log(const std::filesystem::path& dir);

} // namespace conclave::storage
