// The pieces the simulated world gives a node composition
// (runtime/node/node_composition.hpp), so that the simulator runs the actors
// and the wiring `conclave node` runs: the candidate's transport and clock,
// the replica host's transport, all through the world (world.hpp).
//
// A composed node occupies these ports of its world node: the candidate
// (election messages, its timers and the world's peer down/up notices), the
// replica host (replication messages from peers), the replica front, and the
// node's disk releaser (completes the simulated disk's syncs). All of them
// belong to the node: a pause freezes them, a crash kills them.
#pragma once

#include "actors/election/host.hpp"
#include "actors/replication/replica_host.hpp"
#include "runtime/sim/world.hpp"

#include <memory>

namespace conclave::sim {

enum node_port : port_id {
  candidate_port = 0,
  host_port = 1,
  front_port = 2,
  disk_port = 3,
};

/// The candidate's transport: election messages through the world's network
/// to the peer's candidate. Crashes and restarts are seen through the world's
/// notices (set_node_notices), so watch() does nothing.
class world_election_transport final : public election::transport {
public:
  world_election_transport(world& w, node_id self) : w_(w), self_(self) {}
  void send(caf::local_actor*, node_id to, const election::message& m) override;
  void watch(caf::local_actor*, node_id) override {}
  std::optional<node_id> node_of(const caf::actor_addr&) const override {
    return std::nullopt;
  }

private:
  world& w_;
  node_id self_;
};

/// The replica host's transport: replication messages and checkpoint chunks
/// through the world's network to the peer's host.
class world_replica_transport final : public replication::replica_transport {
public:
  world_replica_transport(world& w, node_id self) : w_(w), self_(self) {}
  void deliver(node_id to, const replication::message& m) override;
  void deliver_chunk(node_id to, const replication::snapshot_chunk& c) override;
  uint64_t records_shipped() const override { return shipped_; }

private:
  world& w_;
  node_id self_;
  uint64_t shipped_ = 0;
};

/// Makes the world tell every candidate of a peer's crash or restart (the
/// peer links' down/up, `delay` after it).
void set_node_notices(world& w, duration delay = std::chrono::milliseconds(1));

/// The body of a life whose storage refused to open: `conclave node` prints
/// the line and exits 1. One actor that drops whatever it is sent, until the
/// workload takes the node down (once the fault that started it is applied).
node_body refused_node_body(caf::actor_system& sys);

} // namespace conclave::sim
