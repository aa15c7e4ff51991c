// The agent (docs/patterns.md, "Scheduler Agent Supervisor"): wraps one remote
// service — a function or an actor — for one agent kind. For each dispatch it
// calls the service with the step's idempotency key (the same on every try and
// every attempt, so the service can de-duplicate), retries transient failures
// with the step's retry policy (backoff with jitter from a seeded generator),
// and:
//   - success                      → replies the outcome;
//   - permanent failure, or an error kind the policy lists as non-retryable
//                                  → replies the failure at once;
//   - tries exhausted before the deadline → replies the transient failure (the
//                                    scheduler hands it to recovery);
//   - the deadline comes (a hung service, or the next backoff would end past it)
//                                  → gives up and replies NOTHING: another agent
//                                    may already be running the step again.
// A service actor that does not answer in time counts as a hang. Time comes
// from the actor's clock (virtual under the test coordinator).
#pragma once

#include "actors/timer/host_clock.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/workflow_probe.hpp"

#include <caf/actor_system.hpp>

#include <functional>
#include <memory>

namespace conclave::workflow {

/// A service as a function: one try, answered at once.
using service_fn = std::function<step_outcome(const service_call&)>;

struct agent_options {
  /// Unique among agents (the supervisor watches agents by this id).
  uint64_t id = 0;
  /// Exactly one of the two.
  service_fn function;
  service_actor service;
  /// Seed of the jitter generator.
  uint64_t seed = 1;
  std::shared_ptr<workflow_probe> probe;
  /// Added to the actor clock's reading to make the workflow's timestamps
  /// (deadlines, CompleteBy, events). 0 under the test coordinator; a node
  /// sets it so they are wall-clock time since the Unix epoch, comparable
  /// across the cluster's processes and machines (within their clock skew).
  duration clock_offset{0};
  /// How the actor reads time and arms its timers (null: CAF's clock); the
  /// simulated world gives its node's drifting clock.
  std::shared_ptr<host_clock> clock;
};

agent_actor spawn_agent(caf::actor_system& sys, agent_options opts);

} // namespace conclave::workflow
