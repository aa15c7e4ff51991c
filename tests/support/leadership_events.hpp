// Leadership events for tests that drive a supervisor by hand.
#pragma once

#include "protocols/election/type_ids.hpp"

#include <cstdint>

namespace conclave::test {

/// "Node `id` became leader in epoch `epoch`" (incarnation 1).
inline election::leadership_event became_leader(uint64_t epoch, uint64_t id) {
  election::leadership_event ev;
  ev.what = election::leadership_event::kind::became_leader;
  ev.self = election::node_id{id};
  ev.leader = election::node_id{id};
  ev.t = election::term{epoch, election::node_id{id}, 1};
  return ev;
}

} // namespace conclave::test
