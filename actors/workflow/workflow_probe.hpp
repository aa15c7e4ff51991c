// workflow_probe: the metrics hooks of the scheduler, agent and supervisor
// (one probe for the workflows). The defaults do nothing; a Prometheus
// implementation is the runtime's business (not written yet). Actors call it
// from their own handlers; one probe shared by several actors in a real
// actor system must therefore be thread-safe.
#pragma once

#include "protocols/workflow/records.hpp"

#include <chrono>
#include <cstdint>

namespace conclave::workflow {

class workflow_probe {
public:
  virtual ~workflow_probe() = default;
  /// A scheduler claimed a step and dispatched it.
  virtual void dispatched(bool /*compensation*/) {}
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
  /// A job started compensating.
  virtual void compensation_started() {}
  /// One supervisor scan of the CompleteBy index and how long it took.
  virtual void scanned(std::chrono::nanoseconds) {}
  /// A job changed state (jobs by state: +1 for `to`, -1 for `from`).
  virtual void job_state_changed(job_state /*from*/, job_state /*to*/) {}
};

/// Does nothing; what actors use when they are given no probe.
inline workflow_probe& null_workflow_probe() {
  static workflow_probe instance;
  return instance;
}

} // namespace conclave::workflow
