// A log device in memory, for deterministic tests and simulation: records are
// kept as encoded frames; a sync's completion callback (which posts a message
// to the host actor) runs at once, or when the test releases it, so the
// completion is one more event in the test coordinator's order. Syncs can be held back
// (to test that commits wait for durability), failed (fault injection), and a crash drops
// what was appended but not synced.
//
// With set_checkpoints_wait_for_sync(true) (replica hosts, the simulated disk),
// a checkpoint or an installed snapshot is durable only once a sync issued
// after it completes: a crash before that returns to the checkpoint and log
// from before it (old state or new, never a mix). Without it (the default,
// store hosts), a checkpoint is durable at once.
//
// Not thread-safe: one host actor uses it at a time (the device outlives host
// lives to model a restart).
#pragma once

#include "storage/api/log_device.hpp"

#include <deque>
#include <functional>
#include <optional>

namespace conclave::store {

class memory_log_device final : public log_device {
public:
  memory_log_device() = default;

  result<void> append(const log_record& r) override;
  void sync(sync_callback done) override;
  result<void> truncate_after(lsn at) override;
  result<void> checkpoint(std::string image, lsn at) override;
  result<void> install_snapshot(std::string image, lsn at) override;
  result<recovered> recover() override;

  /// true: checkpoints and installs are durable only once a later sync
  /// completes (see above).
  void set_checkpoints_wait_for_sync(bool on) { gated_ = on; }

  // -- fault injection and inspection ----------------------------------------

  /// false: syncs wait for release_syncs() (default true: complete on the
  /// next event).
  void set_auto_sync(bool on) { auto_sync_ = on; }
  /// Completes every held sync.
  void release_syncs();
  /// Every later sync fails with io_failure.
  void fail_syncs() { failing_ = true; }
  /// A crash: records appended but not synced are lost, held syncs dropped.
  void crash();

  lsn durable_lsn() const { return durable_; }
  size_t held_syncs() const { return held_.size(); }
  uint64_t syncs() const { return syncs_; }
  size_t record_count() const { return frames_.size(); }
  lsn checkpoint_lsn() const { return checkpoint_lsn_; }
  /// A checkpoint or install waits for a sync (a crash would undo it).
  bool checkpoint_pending() const { return before_.has_value(); }

private:
  /// What a crash returns to while a checkpoint or install is not durable.
  struct durable_view {
    std::string checkpoint;
    lsn checkpoint_lsn;
    std::deque<std::pair<lsn, std::string>> frames;
    lsn durable;
  };
  struct held_sync {
    lsn upto;
    sync_callback done;
    /// syncs_ when it was issued (a sync issued after a staged checkpoint
    /// makes it durable).
    uint64_t seq = 0;
    /// What it covers of the durable view saved by stage().
    lsn pre_upto;
  };
  /// Saves the durable view before a checkpoint or install (gated only).
  void stage();

  std::string checkpoint_;
  lsn checkpoint_lsn_;
  /// Encoded frames after the checkpoint, with their lsn.
  std::deque<std::pair<lsn, std::string>> frames_;
  lsn appended_;
  lsn durable_;
  bool auto_sync_ = true;
  bool failing_ = false;
  bool gated_ = false;
  uint64_t syncs_ = 0;
  std::vector<held_sync> held_;
  std::optional<durable_view> before_;
  uint64_t staged_seq_ = 0;
};

} // namespace conclave::store
