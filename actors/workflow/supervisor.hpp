// The supervisor (docs/patterns.md, "Scheduler Agent Supervisor"): finds steps whose
// attempt is lost and asks for their recovery; it knows nothing of the
// business logic and restarts no actor.
//
// - Periodically (scan_interval) it enumerates the CompleteBy index up to now:
//   every entry is a running step past its deadline (hang, lost message, agent
//   that gave up). Recovery cause: deadline.
// - It monitors agents and schedulers (watch_atom): when one dies it recovers
//   at once the running steps sent to that agent / locked by that scheduler
//   instance, without waiting for CompleteBy. Recovery cause: monitor.
// - A recovery is one job transaction (see job_store.hpp) that applies
//   lifecycle recover() to the attempt the supervisor saw: below the threshold
//   FailureCount + 1, unlocked, back to pending (claimable after the job's
//   recovery backoff); at the threshold Error with an operator event, or
//   compensation of the completed steps in reverse order.
// - Several supervisors run; only the one its election candidate reports as
//   leader acts (leadership_event, subscribe it to the candidate), and every
//   recovery carries that leader's term. The transaction reads the highest
//   recorded term first and aborts with stale_term if it is higher: a deposed
//   supervisor cannot recover a step, and one attempt is recovered once (a
//   second recovery of the same attempt is stale).
// - A leader refused with stale_term stops acting, reads the recorded term and
//   tells its candidate (observe_atom) that a leader already held that epoch.
//   A candidate restarted without memory may have been elected below a term
//   recorded by an earlier leader; it then takes a term above the recorded
//   one, and the became_leader event that follows lets this supervisor act
//   again. A supervisor whose candidate no longer leads stays idle.
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/store/store_interface.hpp"
#include "actors/timer/host_clock.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/workflow_probe.hpp"

#include <caf/actor_system.hpp>

#include <memory>

namespace conclave::workflow {

struct supervisor_options {
  store::store_actor store;
  duration scan_interval = std::chrono::milliseconds{10};
  std::shared_ptr<workflow_probe> probe;
  /// Added to the actor clock's reading to make the workflow's timestamps
  /// (deadlines, CompleteBy, events). 0 under the test coordinator; a node
  /// sets it so they are wall-clock time since the Unix epoch, comparable
  /// across the cluster's processes and machines (within their clock skew).
  duration clock_offset{0};
  /// How the actor reads time and arms its timers (null: CAF's clock); the
  /// simulated world gives its node's drifting clock.
  std::shared_ptr<host_clock> clock;
  /// Where committed job events are published (a client, see client_actor's
  /// subscriptions); none if null.
  caf::actor events;
  /// The candidate whose leadership events this supervisor follows: told the
  /// recorded epoch when a write is refused as stale. Without it, a supervisor
  /// fenced off waits for a leadership event from elsewhere.
  election::candidate_actor candidate;
  /// A planted defect for the simulator's meta-test: recovery writes ignore
  /// the attempt fence (lifecycle recover(), unsafe_ignore_fence). Never set
  /// it outside that test.
  bool unsafe_ignore_attempt_fence = false;
};

/// Spawns a supervisor. It acts only after a leadership_event says its
/// candidate became leader (send it those events, or subscribe it to a
/// candidate: (subscribe_atom, actor_cast<actor>(supervisor))).
supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opts);

} // namespace conclave::workflow
