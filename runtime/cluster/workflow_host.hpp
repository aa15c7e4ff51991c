// The workflow actors of one node (docs/concepts/workflows.md, "Workflows
// across nodes"): every node runs a scheduler and an agent per registered
// service; every node runs a supervisor, and only the one whose candidate
// leads acts (its recovery writes carry the leader's term); job state lives
// in the cluster's replicated store (actors/workflow/replicated_store.hpp),
// reached through the node's own client connections to every member.
//
// - The scheduler's instance is the node id and its incarnation the time the
//   process started: a restarted node resumes the steps its previous life
//   had claimed.
// - Each node writes the kinds it serves to wf.agents (retried until the
//   store takes it), so a client can refuse a kind no node serves.
// - A member whose connection drops (killed, or paused past the link
//   timeout) is reported to this node's supervisor; the leader's recovers at
//   once every step that member's scheduler had claimed, without waiting for
//   the step's deadline. A paused member that comes back and completes such
//   a step late is refused by the step's attempt (a stale outcome).
// - Workflow timestamps are wall-clock (the actors' clock_offset): deadlines
//   written by one node are compared by the supervisor of another, so the
//   members' clocks must agree within a small fraction of a step's timeout.
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/workflow/interfaces.hpp"
#include "runtime/node/node_config.hpp"
#include "runtime/node/node_log.hpp"

#include <caf/actor_system.hpp>

namespace prometheus {
class Registry;
}

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace conclave::cluster {

struct workflow_host_options {
  /// Kind -> the services serving it on this node (one agent each; a kind
  /// with several runs that many steps at once). The host stops them.
  std::map<std::string, std::vector<workflow::service_actor>> services;
  /// This node's election candidate: the supervisor follows its leadership.
  election::candidate_actor candidate;
  std::shared_ptr<const node::node_log> log;
  /// Where the workflow counters go (the node's /metrics registry); none if
  /// null. The jobs and steps by state are not exported by a node (its own
  /// changes are only part of the cluster's): `conclave job list` has them.
  std::shared_ptr<prometheus::Registry> metrics;
  /// How often the scheduler looks for ready steps, the supervisor for
  /// expired ones.
  std::chrono::milliseconds poll_interval{50};
  std::chrono::milliseconds scan_interval{200};
  /// Ready jobs are shared among the members by a hash of their id; one
  /// ready this long is claimed by whichever member polls first (its share's
  /// member may be dead).
  std::chrono::milliseconds takeover_after{200};
};

class workflow_host {
public:
  /// How long the host's replication client takes at most for one request,
  /// retries included.
  static constexpr std::chrono::milliseconds client_deadline{5000};

  /// Starts the node's workflow actors on `sys` (configured with
  /// configure_workflows()).
  workflow_host(caf::actor_system& sys, const node::node_config& c,
                workflow_host_options opts);
  ~workflow_host();
  workflow_host(const workflow_host&) = delete;
  workflow_host& operator=(const workflow_host&) = delete;

  /// A workflow client actor (actors/workflow/interfaces.hpp, client_actor)
  /// that submits to and reads this cluster's jobs.
  workflow::client_actor client() const;

  /// The replication client the host's actors use (answers txn_request,
  /// read_request and list_request of actors/replication/messages.hpp).
  caf::actor replication_client() const;

  /// Stops the actors (idempotent). Running steps are left to their
  /// deadlines or to the leader's supervisor.
  void stop();

private:
  struct state;
  std::shared_ptr<state> s_;
};

/// Registers the message types the workflow actors exchange.
void configure_workflows(caf::actor_system_config& cfg);

/// Workflow time for a process: the offset that turns CAF's clock (steady)
/// into wall-clock time since the Unix epoch.
workflow::duration wall_clock_offset();

} // namespace conclave::cluster
