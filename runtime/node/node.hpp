// One member of a cluster as an OS process: an actor system with the middleman
// (heartbeats and connection timeout on), a candidate, a published gate, one
// connector per higher-id member, metrics on /metrics, status.json, and signal
// handling. See docs/design/node.md.
//
//   SIGTERM / SIGINT  a leader resigns first (the others elect at once), then
//                     the node leaves and exits with status 0.
#pragma once

#include <caf/fwd.hpp>

#include <functional>

#include "runtime/node/node_config.hpp"

#include <memory>

namespace conclave::election {
class leader_task;
}

namespace prometheus {
class Registry;
}

namespace conclave::node {

class node_log;
class http_backend_slot;

/// Exit status of a node whose --listen or --metrics address is taken (also when
/// it is taken between the up-front check and the bind): the launcher retries on
/// new ports when it sees it. Documented in docs/design/node.md.
constexpr int exit_address_in_use = 4;

/// What a program embedding the node adds (include/conclave/node.hpp).
struct node_hooks {
  /// Started while this node acts as leader, cancelled when that ends.
  std::shared_ptr<const election::leader_task> task;
  /// The node's log; made from the config when null.
  std::shared_ptr<const node_log> log;
  /// --algorithm lease: starts the node's leadership by lease once the node
  /// has joined (the candidate then runs no task) and returns what stops it
  /// (runtime/cluster/lease_leadership.hpp; set by the embed API).
  std::function<std::function<void()>(caf::actor_system&, const node_config&,
                                      std::shared_ptr<const election::leader_task>,
                                      std::shared_ptr<const node_log>)>
      start_lease_leadership;
  /// Registers more message types before the actor system starts (the
  /// workflow actors' types).
  std::function<void(caf::actor_system_config&)> configure;
  /// Starts the node's workflow actors once it has joined, given its
  /// election candidate, and returns what stops them (before the node
  /// leaves; runtime/cluster/workflow_host.hpp, set by the embed API).
  std::function<std::function<void()>(
      caf::actor_system&, const node_config&, const caf::actor& candidate,
      std::shared_ptr<const node_log>, std::shared_ptr<prometheus::Registry>)>
      start_workflows;
  /// Where the program puts the store and workflow clients that the HTTP
  /// API's data routes use (http_routes.hpp), typically from
  /// start_workflows; without it those routes answer 503.
  std::shared_ptr<http_backend_slot> http_backends;
};

/// Runs the node until SIGTERM or SIGINT. Returns the process exit status:
/// 0 after a clean shutdown, exit_address_in_use if an address cannot be bound,
/// 1 otherwise.
int run_node(const node_config& cfg, const node_hooks& hooks = {});

} // namespace conclave::node
