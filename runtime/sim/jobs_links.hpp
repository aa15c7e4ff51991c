// The links of the jobs workload: small actors that stand between a scheduler
// and an agent, and between an agent and the service, and do to the messages
// what the fault spec says (fault_plan.hpp). The workflow actors are not
// changed: a scheduler is given a link where it would be given an agent, an
// agent a link where it would be given its service.
//
// - Every request and every reply crossing a link takes a delay drawn from
//   [delay_min, delay_max]; until `heal_at`, a request or a reply is lost with
//   probability `loss`, and a request is delivered twice with probability
//   `dup` (the second copy's reply is dropped: CAF answers a request once).
//   A lost request or reply is never answered; the requester's own timeout
//   (the scheduler's reply wait, the agent's deadline) decides what follows.
// - A link forwards to whatever its target is at delivery time: an agent link
//   is the agent's stable address (a restarted agent takes over its link, as
//   a restarted process takes over its address in a node's directory); a
//   request to a dead target is answered with CAF's error, as a refused
//   connection would be.
// - The service link also decides, per call, what the test service does: the
//   first active window (fail, reject, hang, slow) whose coin comes up sets
//   the behaviour, pushed onto the service's script right before the call
//   goes out (the link is the service's only caller, so script and calls stay
//   in step).
//
// Every random choice comes from the run's generator; all links of a run run
// on one test coordinator, so the draws happen in one deterministic order.
#pragma once

#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/test_service.hpp"

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>

#include <memory>
#include <random>
#include <vector>

namespace conclave::sim {

/// A window of misbehaving service calls.
struct service_window {
  workflow::test_behavior behavior = workflow::test_behavior::ok;
  caf::actor_clock::time_point from;
  caf::actor_clock::time_point until;
  double probability = 1;
};

/// What the links of one run share: the network faults, the generator and
/// the counters.
struct link_faults {
  std::mt19937_64 rng;
  double loss = 0;
  double dup = 0;
  std::chrono::nanoseconds delay_min = std::chrono::milliseconds(1);
  std::chrono::nanoseconds delay_max = std::chrono::milliseconds(1);
  /// Loss and duplication stop here.
  caf::actor_clock::time_point heal_at;
  std::vector<service_window> windows;
  // -- counters --
  uint64_t messages = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
};

/// Where a link forwards to; the simulation swaps `handle` on a restart.
struct link_target {
  caf::actor handle;
  /// Set for the service link: the test service whose script it drives.
  std::shared_ptr<workflow::test_service_state> service;
};

/// A link a scheduler uses as an agent.
workflow::agent_actor spawn_agent_link(caf::actor_system& sys,
                                       std::shared_ptr<link_faults> faults,
                                       std::shared_ptr<link_target> target);

/// A link an agent uses as its service.
workflow::service_actor spawn_service_link(caf::actor_system& sys,
                                           std::shared_ptr<link_faults> faults,
                                           std::shared_ptr<link_target> target);

} // namespace conclave::sim
