// Leadership by lease (`--algorithm lease`): the node races the other members
// for one lease of the cluster's own replicated store and runs its leader
// task while it holds it.
//
// A thread of the node acquires lease `leader_lease` (FIFO, polling), then
// starts the leader task with term (token, this node, incarnation): the
// fencing token is the term's epoch, so a later leader's term is always
// higher. It renews every ttl / 3. The task is cancelled as soon as a renewal
// is refused (another holder was granted the lease) or no renewal succeeded
// until `margin` before the lease's end on this node's clock (send time of the
// last successful grant or renewal + ttl), so the task is told to stop before
// anyone else can lead. Then the thread campaigns again. On stop() a holder
// releases the lease, so another node leads at once.
//
// The client connects to every member through their gates like `conclave kv`
// does, over TLS with this node's own certificate when the node uses TLS.
#pragma once

#include "runtime/node/node_config.hpp"
#include "runtime/node/node_log.hpp"

#include <caf/fwd.hpp>

#include <functional>
#include <memory>

namespace conclave::election {
class leader_task;
}

namespace conclave::cluster {

class lease_leadership {
public:
  /// Starts campaigning on `sys` (the node's actor system).
  lease_leadership(caf::actor_system& sys, const node::node_config& c,
                   std::shared_ptr<const election::leader_task> task,
                   std::shared_ptr<const node::node_log> log);
  /// Cancels a running task, releases a held lease, joins the thread.
  ~lease_leadership();
  void stop();

  struct state;

private:
  std::shared_ptr<state> s_;
};

} // namespace conclave::cluster
