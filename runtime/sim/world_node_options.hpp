// What `conclave node` composes (runtime/node/node_composition.hpp) for one
// member of a simulated world, with the world's pieces: the candidate's and
// the replica host's transports through the world's network, their clocks
// the member's drifting clock, a probe reading world time, and the given
// simulated disk and term file as the replica's storage, and the member's
// promise record (kept across its crashes, as a file written to completion). Every
// workload on the world starts its nodes from this and adjusts what is its own
// (checkpoint triggers, planted defects, the workflow part).
#pragma once

#include "runtime/node/node_composition.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/sim/node_world.hpp"
#include "runtime/sim/sim_disk.hpp"
#include "runtime/sim/world.hpp"
#include "runtime/sim/world_clock.hpp"

#include <chrono>
#include <memory>
#include <vector>

namespace conclave::sim {

inline node::composition_options world_node_options(
    world& w, node_id id, const std::vector<node_id>& members,
    const election::election_config& econfig, const replication::replica_config& rconfig,
    std::shared_ptr<sim_disk> disk, std::shared_ptr<replication::memory_term_file> terms,
    uint32_t incarnation, std::shared_ptr<election::promise_record> record = nullptr) {
  node::composition_options o;
  auto& co = o.candidate;
  co.id = id;
  co.peers = members;
  co.config = econfig;
  co.net = std::make_shared<world_election_transport>(w, id);
  co.clock = std::make_shared<world_host_clock>(w, id, candidate_port);
  co.incarnation = incarnation;
  co.record = std::move(record);
  node::node_config cfg;
  cfg.id = id;
  cfg.election = econfig;
  for (auto p : members)
    if (p != id)
      cfg.peers[p.value] = node::address{"sim", static_cast<uint16_t>(p.value)};
  auto* wp = &w;
  o.probe = std::make_shared<node::node_probe>(
      cfg, std::make_shared<node::status_writer>("", node::node_status{}),
      [wp] { return std::chrono::steady_clock::time_point{} + wp->now(); });
  replication::replica_host_options ro;
  ro.config = rconfig;
  ro.device = std::move(disk);
  ro.terms = std::move(terms);
  ro.transport = std::make_shared<world_replica_transport>(w, id);
  ro.clock = std::make_shared<world_host_clock>(w, id, host_port);
  o.replica = std::move(ro);
  return o;
}

} // namespace conclave::sim
