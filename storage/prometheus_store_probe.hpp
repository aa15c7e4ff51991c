// prometheus_store_probe: the store's metrics in a prometheus-cpp registry
// (names in docs/reference/metrics.md, "Store"). Thread-safe: prometheus-cpp metrics are
// atomic and histograms lock internally.
#pragma once

#include "storage/store_probe.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>

namespace conclave::store {

class prometheus_store_probe final : public store_probe {
public:
  /// Registers the metrics in `registry` (a new one if null).
  explicit prometheus_store_probe(
      std::shared_ptr<prometheus::Registry> registry = nullptr);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void committed(std::chrono::nanoseconds latency) override;
  void aborted() override;
  void lock_waited() override;
  void lock_timed_out() override;
  void log_bytes(uint64_t n) override;
  void log_synced(uint64_t records) override;
  void checkpoint_written(std::chrono::nanoseconds d, uint64_t bytes) override;
  void checkpoint_failed() override;
  void recovered(std::chrono::nanoseconds d, uint64_t records) override;
  void corruption(std::string_view what) override;
  void failed() override;

private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* commits_;
  prometheus::Histogram* commit_seconds_;
  prometheus::Counter* aborts_;
  prometheus::Counter* lock_waits_;
  prometheus::Counter* lock_timeouts_;
  prometheus::Counter* log_bytes_;
  prometheus::Counter* log_syncs_;
  prometheus::Counter* checkpoints_;
  prometheus::Counter* checkpoint_failures_;
  prometheus::Histogram* checkpoint_seconds_;
  prometheus::Gauge* checkpoint_bytes_;
  prometheus::Gauge* recovery_seconds_;
  prometheus::Gauge* recovered_records_;
  prometheus::Counter* corrupt_log_tail_;
  prometheus::Counter* corrupt_checkpoint_;
  prometheus::Gauge* failed_;
};

} // namespace conclave::store
