// store_probe: the metrics hooks of the reliable collections store. The
// state manager calls them from whichever thread did the work (callers, the
// log writer, the timer and checkpoint threads), so implementations must be thread-safe.
// The null probe is the default; prometheus_store_probe exports them
// (docs/reference/metrics.md lists the names).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

namespace conclave::store {

class store_probe {
public:
  virtual ~store_probe() = default;
  /// A transaction committed (changed something); latency from commit() to
  /// durable (strong) or to applied (weak).
  virtual void committed(std::chrono::nanoseconds) {}
  virtual void aborted() {}
  /// An operation had to wait for a lock.
  virtual void lock_waited() {}
  /// A lock wait reached its deadline.
  virtual void lock_timed_out() {}
  /// Bytes appended to the log.
  virtual void log_bytes(uint64_t) {}
  /// One fdatasync of the log covered `records` records.
  virtual void log_synced(uint64_t /*records*/) {}
  virtual void checkpoint_written(std::chrono::nanoseconds, uint64_t /*bytes*/) {}
  /// Writing a checkpoint failed; the log was kept and the store goes on.
  virtual void checkpoint_failed() {}
  virtual void recovered(std::chrono::nanoseconds, uint64_t /*records replayed*/) {}
  /// Recovery cut a torn or corrupt log tail, or skipped a corrupt checkpoint.
  virtual void corruption(std::string_view /*what: log_tail, checkpoint*/) {}
  /// The store stopped after a failed write or fsync.
  virtual void failed() {}
};

/// Does nothing; what a store uses when it is given no probe.
inline store_probe& null_store_probe() {
  static store_probe instance;
  return instance;
}

} // namespace conclave::store
