// node_composition: the actors one conclave node runs, wired together, with no
// knowledge of whether they run in a process or in the simulated world.
//
// A node is an election candidate and, when it keeps a replica, a replica host,
// the replica front clients talk to, and the leadership wiring between them
// (replica_leadership.hpp): the candidate's probe is a leadership_relay that
// makes the host primary of the term its candidate acts in, and the front
// follows the candidate through a leadership_board. What differs between a
// process and the world comes in through the options: how the candidate and
// the host reach their peers (transports), how the candidate reads time
// (clock), where the replica keeps its log and term (storage), and the probe
// that turns what the node does into metrics and status.
//
// `conclave node` (node.cpp) gives it the middleman's peer links, the files of
// --data-dir and CAF's clock; the simulator (runtime/sim/node_world.hpp) gives
// it the world's network, simulated disks and per-node drifting clocks. Both
// run this function, so the simulator runs the wiring users deploy.
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/replication/replica_host.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/node/replica_front.hpp"
#include "runtime/node/replica_leadership.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <memory>
#include <optional>

namespace conclave::node {

struct composition_options {
  /// The candidate: its id, peers, configuration, transport, clock (null:
  /// CAF's), incarnation and leader task. Its probe is set by the
  /// composition: `probe` below, behind the leadership relay when the node
  /// keeps a replica.
  election::candidate_options candidate;
  std::shared_ptr<node_probe> probe;
  /// The replica host, when the node keeps one (device, term file, transport
  /// and tuning set; self and members as the candidate's).
  std::optional<replication::replica_host_options> replica;
  /// The front's settings (its host, probe, transport and board are set by
  /// the composition).
  replica_front_options front;
};

struct composed_node {
  election::candidate_actor candidate;
  /// Invalid when the node keeps no replica.
  caf::actor host;
  caf::actor front;
  std::shared_ptr<leadership_board> board;
};

/// Spawns the node's actors, wired together. The candidate waits for
/// start_atom unless the options say otherwise.
composed_node compose_node(caf::actor_system& sys, composition_options opts);

} // namespace conclave::node
