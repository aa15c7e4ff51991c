// What `conclave node` composes (runtime/node/node_composition.hpp) for one
// member of a simulated world, with the world's pieces: the candidate's and
// the replica host's transports through the world's network, their clocks
// the member's drifting clock, a probe reading world time, and the given
// storage one life of the member opened (world_node_disk.hpp): its disk, term
// file, promise record and whether it rejoins amnesiac. Every
// workload on the world starts its nodes from this and adjusts what is its own
// (checkpoint triggers, planted defects, the workflow part).
#pragma once

#include "runtime/node/node_composition.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/sim/disk_counts.hpp"
#include "runtime/sim/fault_plan.hpp"
#include "runtime/sim/node_world.hpp"
#include "runtime/sim/world.hpp"
#include "runtime/sim/world_clock.hpp"
#include "runtime/sim/world_node_disk.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace conclave::sim {

inline node::composition_options
world_node_options(world& w, node_id id, const std::vector<node_id>& members,
                   const election::election_config& econfig,
                   const replication::replica_config& rconfig,
                   const world_node_disk::life& storage, uint32_t incarnation) {
  node::composition_options o;
  auto& co = o.candidate;
  co.id = id;
  co.peers = members;
  co.config = econfig;
  co.net = std::make_shared<world_election_transport>(w, id);
  co.clock = std::make_shared<world_host_clock>(w, id, candidate_port);
  co.incarnation = incarnation;
  co.record = storage.record;
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
  ro.device = storage.disk;
  ro.terms = storage.terms;
  ro.amnesiac = storage.amnesiac;
  ro.healed = storage.healed;
  ro.transport = std::make_shared<world_replica_transport>(w, id);
  ro.clock = std::make_shared<world_host_clock>(w, id, host_port);
  o.replica = std::move(ro);
  return o;
}

/// What the node does when its replica host's storage fails
/// (replica_host_options::on_failure): it leaves, as `conclave node` exits 1,
/// so the world crashes it at once (it stays down until a restart). A failure
/// on a disk that neither lost power nor had a bit flipped in this life is
/// counted in `counts`: the simulated file system returns no error, so it is
/// a defect of the storage code.
inline std::function<void(const std::string&)>
leave_on_storage_failure(world& w, node_id id, std::shared_ptr<world_node_disk> disk,
                         disk_counts& counts) {
  auto* wp = &w;
  auto* cp = &counts;
  return [wp, id, disk, cp](const std::string& what) {
    if (!disk->faulted())
      cp->failed(id, what);
    wp->at(wp->now(), [wp, id] {
      if (wp->alive(id))
        wp->crash(id);
    });
  };
}

/// Applies a disk word to its node's disk: `fsync-loss` (the power goes
/// while the node's next sync is under way, and the node crashes then; at
/// once if it is down or its disk is the memory disk, which has no page
/// cache) or `bitflip` (counted in `counts` if a synced bit was there to
/// flip). False for any other word.
inline bool apply_disk_fault(world& w, const fault& f, world_node_disk& disk,
                             disk_counts& counts) {
  if (f.what == fault::kind::fsync_loss) {
    auto id = f.node;
    auto* wp = &w;
    if (!w.alive(id) || !disk.power_loss_at_next_sync([wp, id] {
          wp->at(wp->now(), [wp, id] { wp->crash(id); });
        }))
      w.crash(id);
    return true;
  }
  if (f.what == fault::kind::bitflip) {
    if (disk.flip())
      ++counts.bitflips;
    return true;
  }
  return false;
}

/// Applies `disk-stall` (its start, or its end with `end`) to the node's
/// disk; false for every other fault.
inline bool apply_disk_stall(world& w, const fault& f, world_node_disk& disk, bool end) {
  if (f.what != fault::kind::disk_stall)
    return false;
  if (end)
    disk.disk().end_stall();
  else
    disk.disk().stall();
  w.run_actors();
  return true;
}

/// Takes down every node whose storage refused to open in its last start
/// (`refused`, then cleared), as `conclave node` exits 1.
template <class Nodes>
void take_down_refused(world& w, const std::vector<node_id>& members, Nodes& nodes) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].refused) {
      nodes[i].refused = false;
      w.crash(members[i]);
    }
}

} // namespace conclave::sim
