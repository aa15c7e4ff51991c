// workflow_part: the workflow actors of one node (docs/concepts/workflows.md,
// "Workflows across nodes"), wired together, with no knowledge of whether
// they run in a process or in the simulated world. It is the workflow half of
// the node's composition (node_composition.hpp).
//
// A node runs: a replication client that reaches the members' replica fronts,
// the workflow store adapter over it (actors/workflow/replicated_store.hpp:
// job state lives in the replicated store), one agent per service it serves,
// one scheduler (instance = node id), one client, and one supervisor that
// follows the node's election candidate and acts only while it leads, its
// recovery writes fenced by the term.
//
// What differs between a process and the world comes in through the options:
// how the replication client finds a member's front (`lookup`), how the
// actors read time and arm timers (`clock`, `clock_offset`), the services the
// agents call, and the probe. `conclave node` and embedded programs run it
// through cluster::workflow_host (middleman lookups, CAF's clock, wall-clock
// offset).
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/replication/client.hpp"
#include "actors/timer/host_clock.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/workflow_probe.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace conclave::node {

struct workflow_part_options {
  /// This node's id: the scheduler's instance, the agents' id prefix.
  uint64_t self = 0;
  /// Distinguishes this life of the node from earlier ones (a restarted
  /// scheduler resumes the steps it had claimed under the same instance):
  /// the scheduler's incarnation, the sessions' and job ids' suffix, the
  /// agents' jitter seed.
  uint64_t incarnation = 1;
  /// Every member of the replica set (this node included).
  std::vector<replication::node_id> members;
  /// How the replication client finds a member's replica front.
  replication::host_lookup lookup;
  /// How long one store request may take in all (retries included).
  caf::timespan store_deadline = std::chrono::seconds(5);
  /// Kind -> the services serving it on this node (one agent each).
  std::map<std::string, std::vector<workflow::service_actor>> services;
  /// The node's election candidate: the supervisor follows its leadership.
  election::candidate_actor candidate;
  std::shared_ptr<workflow::workflow_probe> probe;
  /// How the actors read time and arm timers (null: CAF's clock), and the
  /// offset that makes their timestamps comparable across nodes.
  std::shared_ptr<host_clock> clock;
  workflow::duration clock_offset{0};
  workflow::duration poll_interval = std::chrono::milliseconds(50);
  workflow::duration scan_interval = std::chrono::milliseconds(200);
  /// The scheduler's share of the ready jobs (see scheduler_options::mine);
  /// null: every job.
  std::function<bool(const workflow::job_id&)> mine;
  workflow::duration takeover_after = std::chrono::milliseconds(200);
  /// A planted defect for the simulator's meta-test only
  /// (supervisor_options::unsafe_ignore_attempt_fence).
  bool unsafe_ignore_attempt_fence = false;
};

struct workflow_part {
  /// The replication client the actors' store adapter uses.
  caf::actor repl;
  store::store_actor store;
  std::vector<workflow::agent_entry> agents;
  workflow::scheduler_actor scheduler;
  workflow::supervisor_actor supervisor;
  workflow::client_actor client;
  /// Every actor above and the services: what stopping the part stops.
  std::vector<caf::actor> actors;
};

/// Spawns the node's workflow actors, wired together, and subscribes the
/// supervisor to the candidate (if any).
workflow_part compose_workflows(caf::actor_system& sys, workflow_part_options opts);

} // namespace conclave::node
