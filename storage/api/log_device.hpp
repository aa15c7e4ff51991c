// The log device a store host writes its records to (docs/architecture.md,
// "Pure core, thin actor host"). The host appends every record the store core
// returns, asks for a sync, and learns that records are durable only through
// the completion it passes. The device never blocks the host; the completion
// may run on any thread, or inside sync() itself, so hosts make it do nothing
// but post a message to the host actor: syncs complete as events in both
// worlds.
//
// Implementations: memory_log_device (tests and simulation: durable on the
// next event, can lose unsynced records on a simulated crash), and
// storage::wal_log_device (storage/wal_log_device.hpp: the file WAL, group
// commit on a writer thread, whose completions come back from that thread;
// checkpoint files beside the log).
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/log_record.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conclave::store {

class log_device {
public:
  /// The durable lsn, or the error that stopped the device (fatal: the host
  /// stops accepting work). May run on any thread or inside sync().
  using sync_callback = std::function<void(result<lsn>)>;

  virtual ~log_device() = default;

  /// Appends one record (lsn order). An error here is fatal for the host.
  virtual result<void> append(const log_record& r) = 0;

  /// Makes everything appended so far durable; `done` gets the durable lsn.
  virtual void sync(sync_callback done) = 0;

  /// Removes every record after `at` (not below the checkpoint's lsn), durably
  /// once it returns; a sync still in flight then reports at most `at`.
  /// Replication needs it: a secondary drops a suffix that was never
  /// committed. Devices that cannot do it answer bad_argument.
  virtual result<void> truncate_after(lsn at) {
    (void)at;
    return errc::bad_argument;
  }

  /// Stores a checkpoint image covering every record up to `at` (durable
  /// ones only); records up to `at` may then be dropped.
  virtual result<void> checkpoint(std::string image, lsn at) = 0;

  /// Replaces the checkpoint and the whole log with `image` at `at` (a
  /// replica installing a checkpoint streamed by another): afterwards the
  /// log is empty and the next append is at + 1; a sync still waiting
  /// reports at most `at`. Atomic across a crash: recovery finds the old
  /// checkpoint and log, or the new image and an empty log, never a mix.
  /// Devices that cannot do it answer bad_argument.
  virtual result<void> install_snapshot(std::string image, lsn at) {
    (void)image;
    (void)at;
    return errc::bad_argument;
  }

  /// What a restarted host replays: the newest checkpoint image (empty if
  /// none) and the durable records after it, in lsn order.
  struct recovered {
    std::string checkpoint;
    std::vector<log_record> records;
  };
  virtual result<recovered> recover() = 0;
};

} // namespace conclave::store
