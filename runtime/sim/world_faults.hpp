// The fault words that mean the same for every workload whose nodes run on
// the simulated world (runtime/sim/world.hpp) as the node's composition:
// what happens to the acting leader, pauses, partitions and cuts, and an
// election asked of a node. A workload applies its own words (crash and
// restart of a role, service faults, cancel) and hands the rest here; the
// network words become the world's network model.
#pragma once

#include "actors/ask/ask.hpp"
#include "actors/election/candidate_actor.hpp"
#include "runtime/sim/fault_plan.hpp"
#include "runtime/sim/world.hpp"

#include <caf/send.hpp>

#include <optional>
#include <vector>

namespace conclave::sim {

/// The world's network as the plan's network words set it: delays, loss and
/// duplication until the plan heals.
inline network_model world_network_of(const fault_plan& plan) {
  network_model net;
  net.delay_min = plan.delay_min;
  net.delay_max = plan.delay_max;
  net.loss = plan.loss;
  net.dup = plan.dup;
  net.faults_until = plan.heal_time();
  return net;
}

/// The index of the live node whose candidate acts as leader with the
/// highest term, if any (a paused node does not answer). `members[i]` is node
/// i's id and `nodes[i].candidate` its candidate.
template <class Nodes>
std::optional<size_t> acting_world_leader(world& w, const std::vector<node_id>& members,
                                          const Nodes& nodes) {
  std::optional<size_t> best;
  election::term best_term;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!w.alive(members[i]))
      continue;
    auto r =
        ask<election::leader_info>(w.system(), nodes[i].candidate, caf::get_atom::value,
                                   election_atoms::leader_atom::value);
    w.run_actors();
    auto& info = r->value;
    if (info && info->is_leader && info->acting && (!best || best_term < info->t)) {
      best = i;
      best_term = info->t;
    }
  }
  return best;
}

/// Applies `f` if it is one of the shared words; false otherwise (nothing
/// done). `crashed_leaders` holds the leaders crash_leader took and no
/// restart_leader restarted yet, the latest last: each restart_leader
/// restarts the latest (as the election workload does), so that two
/// crash-leaders before two restart-leaders restart both.
template <class Nodes>
bool apply_world_fault(world& w, const fault& f, const std::vector<node_id>& members,
                       const Nodes& nodes, std::vector<size_t>& crashed_leaders) {
  using k = fault::kind;
  auto acting_leader = [&] { return acting_world_leader(w, members, nodes); };
  switch (f.what) {
  case k::crash_leader:
    if (auto l = acting_leader()) {
      crashed_leaders.push_back(*l);
      w.crash(members[*l]);
    }
    return true;
  case k::restart_leader:
    if (!crashed_leaders.empty()) {
      auto l = crashed_leaders.back();
      crashed_leaders.pop_back();
      w.crash(members[l]);
      w.restart(members[l]);
    }
    return true;
  case k::pause:
    w.pause(f.node, f.until);
    return true;
  case k::pause_leader:
    if (auto l = acting_leader())
      w.pause(members[*l], f.until);
    return true;
  case k::partition:
  case k::cut:
    w.add_cut(f.at, f.until, f.groups, f.what == k::cut);
    return true;
  case k::elect:
    if (w.alive(f.node))
      caf::anon_send(nodes[f.node.value - 1].candidate,
                     election_atoms::elect_atom::value);
    return true;
  default:
    return false;
  }
}

} // namespace conclave::sim
