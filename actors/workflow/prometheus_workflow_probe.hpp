// prometheus_workflow_probe: the workflow metrics (workflow_probe.hpp) in a
// prometheus-cpp registry; names in docs/reference/metrics.md, "Workflows". Every
// series is registered at construction, so each one exists (at 0) before the
// first job. Thread-safe: prometheus-cpp counters and gauges are atomic and
// histograms lock internally, so schedulers, agents, supervisors and clients
// on different threads may share one probe.
#pragma once

#include "actors/workflow/workflow_probe.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <memory>

namespace conclave::workflow {

class prometheus_workflow_probe final : public workflow_probe {
public:
  /// Registers the metrics in `registry` (a new one if null). Without
  /// `state_gauges` the jobs and steps by state are left out: in a process
  /// that changes only some of a shared store's jobs (a cluster's node) the
  /// +1/-1 of its own changes say nothing about the jobs.
  explicit prometheus_workflow_probe(
      std::shared_ptr<prometheus::Registry> registry = nullptr, bool state_gauges = true);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void dispatched(bool compensation) override;
  void step_finished(step_state to, std::chrono::nanoseconds d) override;
  void stale_reply() override;
  void agent_retry() override;
  void deadline_expired() override;
  void recovered(recovery_cause c) override;
  void fenced_off() override;
  void compensation_started() override;
  void scanned(std::chrono::nanoseconds d) override;
  void job_state_changed(std::optional<job_state> from, job_state to) override;
  void step_state_changed(std::optional<step_state> from, step_state to) override;

private:
  static constexpr size_t state_count = 7;
  static constexpr size_t cause_count = 3;

  std::shared_ptr<prometheus::Registry> registry_;
  std::array<prometheus::Gauge*, state_count> jobs_{};
  std::array<prometheus::Gauge*, state_count> steps_{};
  prometheus::Counter* dispatches_;
  prometheus::Counter* compensation_dispatches_;
  prometheus::Histogram* step_seconds_;
  prometheus::Counter* stale_replies_;
  prometheus::Counter* retries_;
  prometheus::Counter* deadline_expiries_;
  std::array<prometheus::Counter*, cause_count> recoveries_{};
  prometheus::Counter* fenced_;
  prometheus::Counter* compensations_;
  prometheus::Histogram* scan_seconds_;
};

} // namespace conclave::workflow
