// Agreement: the one definition every simulated check uses (the simulator's
// checkers, the protocol tests' network, the benchmarks).
//
// A group agrees on leader L when every live member follows L (L itself included:
// a leader follows itself), L is live, and L acts as leader. "Acts" is what the
// caller observes from outside: acting according to the candidate, with the
// quorum guard only inside its lease, and never while frozen.
#pragma once

#include "protocols/election/types.hpp"

#include <vector>

namespace conclave::sim {

/// One member as seen from outside, at one instant.
struct member_view {
  bool alive = false;
  election::node_id leader = election::no_node; ///< whom it follows (itself if leading)
  bool acting = false;                          ///< acts as leader right now
};

/// The leader every live member agrees on, or no_node. `members[i]` is node i+1.
inline election::node_id agreed_leader(const std::vector<member_view>& members) {
  election::node_id leader = election::no_node;
  bool any = false;
  for (auto& m : members) {
    if (!m.alive)
      continue;
    if (m.leader == election::no_node)
      return election::no_node;
    if (any && m.leader != leader)
      return election::no_node;
    leader = m.leader;
    any = true;
  }
  if (!any || leader.value < 1 || leader.value > members.size())
    return election::no_node;
  auto& l = members[leader.value - 1];
  return l.alive && l.acting ? leader : election::no_node;
}

} // namespace conclave::sim
