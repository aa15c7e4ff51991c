// A simulated disk of the replication workload (`conclave sim --workload
// replication`; docs/design/simulation.md, "Replication workload").
//
// sim_disk is a log_device over a memory_log_device whose syncs complete
// `fsync` of virtual time after they are asked for (a small releaser actor per
// disk, one of its node's actors in the world: a paused node's syncs complete
// only when it resumes). A crash drops what was appended and not synced.
// A disk stall (`disk-stall@T1-T2:N`) holds every sync until its end.
// With `lying` set it is the broken disk of the checkers' meta-test: it reports
// every sync durable at once, while the records still become durable only
// after `fsync`, so a crash loses records a replica acknowledged as durable.
//
// On files (sim_disk::on_files), the disk is instead the node's real log
// device (storage::wal_log_device without a writer thread) over the node's
// simulated data directory (sim_file_system), attached anew for every life of
// the node after the real open and recovery code ran; a sync's time being up
// makes the WAL write and sync its queue. Records appended and not yet synced
// die with the process (they never left it); crash() closes the device, whose
// file system the caller has taken down first (killed the processes or cut
// the power).
#pragma once

#include "storage/api/memory_log_device.hpp"
#include "storage/wal_log_device.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>

namespace conclave::sim {

/// A simulated disk. Not thread-safe: one host uses it at a time.
class sim_disk final : public store::log_device {
public:
  /// `releaser` completes the syncs; spawn it with spawn_disk_releaser.
  sim_disk(std::chrono::nanoseconds fsync, bool lying) : fsync_(fsync), lying_(lying) {
    inner_.set_auto_sync(false);
    inner_.set_checkpoints_wait_for_sync(true);
  }

  /// A disk on files: attach() the device of each life.
  struct files_t {};
  static constexpr files_t on_files{};
  sim_disk(std::chrono::nanoseconds fsync, bool lying, files_t)
      : fsync_(fsync), lying_(lying), on_files_(true) {}

  void set_releaser(caf::actor releaser) { releaser_ = std::move(releaser); }

  /// On files: the device this life opened (its file system's recovery done).
  void attach(std::shared_ptr<storage::wal_log_device> dev);
  bool files() const { return on_files_; }

  store::result<void> append(const store::log_record& r) override;
  void sync(sync_callback done) override;
  store::result<void> truncate_after(store::lsn at) override;
  store::result<void> checkpoint(std::string image, store::lsn at) override;
  store::result<void> install_snapshot(std::string image, store::lsn at) override;
  store::result<recovered> recover() override;

  /// A crash: records appended but not synced are lost (returns how many);
  /// pending syncs never complete. On files: the device is closed.
  uint64_t crash();
  /// The releaser's message arrived: complete the syncs of generation `gen`
  /// (during a stall, at its end instead).
  void release(uint64_t gen);
  /// A stalled disk completes no sync: the syncs asked for meanwhile, and
  /// those under way when it began, complete when it ends (at once, in order).
  /// A crash does not end a stall; the syncs it dropped never complete.
  void stall();
  void end_stall();
  bool stalled() const { return stalled_; }

  uint64_t syncs() const {
    return on_files_ ? (files_ ? files_->syncs() : 0) : inner_.syncs();
  }
  /// Checkpoints written and snapshots installed on this disk (across the
  /// host's restarts).
  uint64_t checkpoints() const { return checkpoints_; }
  uint64_t installs() const { return installs_; }

private:
  /// The device in use: the memory one, or this life's file one (null while
  /// the node is down).
  store::log_device* device();
  void release_now();

  store::memory_log_device inner_;
  std::shared_ptr<storage::wal_log_device> files_;
  std::chrono::nanoseconds fsync_;
  bool lying_;
  bool on_files_ = false;
  caf::actor releaser_;
  uint64_t generation_ = 0;
  bool stalled_ = false;
  /// A sync was asked for, or its release arrived, during the stall.
  bool release_at_end_ = false;
  store::lsn appended_;
  uint64_t checkpoints_ = 0;
  uint64_t installs_ = 0;
};

/// The actor that completes a sim_disk's syncs (holds it weakly).
caf::actor spawn_disk_releaser(caf::actor_system& sys, std::weak_ptr<sim_disk> disk);

} // namespace conclave::sim
