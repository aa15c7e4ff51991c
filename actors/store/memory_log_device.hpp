// A log device in memory, for deterministic tests and simulation: records are
// kept as encoded frames; a sync's completion callback (which posts a message
// to the host actor) runs at once, or when the test releases it, so the
// completion is one more event in the test coordinator's order. Syncs can be held back
// (to test that commits wait for durability), failed (fault injection), and a crash drops
// what was appended but not synced.
//
// Not thread-safe: one host actor uses it at a time (the device outlives host
// lives to model a restart).
#pragma once

#include "actors/store/log_device.hpp"

#include <deque>
#include <functional>

namespace conclave::store {

class memory_log_device final : public log_device {
public:
  memory_log_device() = default;

  result<void> append(const log_record& r) override;
  void sync(sync_callback done) override;
  result<void> truncate_after(lsn at) override;
  result<void> checkpoint(std::string image, lsn at) override;
  result<recovered> recover() override;

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

private:
  std::string checkpoint_;
  lsn checkpoint_lsn_;
  /// Encoded frames after the checkpoint, with their lsn.
  std::deque<std::pair<lsn, std::string>> frames_;
  lsn appended_;
  lsn durable_;
  bool auto_sync_ = true;
  bool failing_ = false;
  uint64_t syncs_ = 0;
  std::vector<std::pair<lsn, sync_callback>> held_;
};

} // namespace conclave::store
