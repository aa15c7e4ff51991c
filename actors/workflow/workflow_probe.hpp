// workflow_probe: the metrics hooks of the scheduler, agent, supervisor and
// client (one probe for the workflows). The defaults do nothing;
// prometheus_workflow_probe (target conclave::workflow_metrics) fills a
// prometheus-cpp registry. Actors call it from their own handlers; one probe
// shared by several actors in a real actor system must therefore be
// thread-safe.
//
// State hooks: every committed job change reports the job's and each step's
// state change once, from the actor that made it (job_store), so gauges that
// add +1/-1 count the jobs and steps that changed state through this process
// since the probe was attached (not jobs already in a store it reopened).
#pragma once

#include "protocols/workflow/records.hpp"

#include <chrono>
#include <cstdint>
#include <optional>

namespace conclave::workflow {

struct dispatch;

class workflow_probe {
public:
  virtual ~workflow_probe() = default;
  /// A scheduler claimed a step and dispatched it.
  virtual void dispatched(bool /*compensation*/) {}
  /// The same dispatch with what it names (job, step, attempt), for checkers
  /// (the simulation's one_dispatch_per_attempt).
  virtual void dispatched_attempt(const dispatch& /*d*/) {}
  /// A step's outcome was recorded; duration from claim to outcome.
  virtual void step_finished(step_state /*new state*/, std::chrono::nanoseconds) {}
  /// An outcome for an older attempt arrived and changed nothing.
  virtual void stale_reply() {}
  /// An agent retried its service after a transient failure.
  virtual void agent_retry() {}
  /// An agent gave up at the deadline and replied nothing.
  virtual void deadline_expired() {}
  /// A supervisor recovered a step.
  virtual void recovered(recovery_cause) {}
  /// A supervisor's recovery write was refused: a higher term is recorded.
  virtual void fenced_off() {}
  /// A job started compensating (reported by whoever committed the change:
  /// a scheduler, a supervisor or a client's cancel).
  virtual void compensation_started() {}
  /// One supervisor scan of the CompleteBy index and how long it took.
  virtual void scanned(std::chrono::nanoseconds) {}
  /// A job changed state (jobs by state: +1 for `to`, -1 for `from`; no
  /// `from`: the job was just submitted).
  virtual void job_state_changed(std::optional<job_state> /*from*/, job_state /*to*/) {}
  /// A step changed state (same convention).
  virtual void step_state_changed(std::optional<step_state> /*from*/, step_state /*to*/) {
  }
};

/// Does nothing; what actors use when they are given no probe.
inline workflow_probe& null_workflow_probe() {
  static workflow_probe instance;
  return instance;
}

} // namespace conclave::workflow
