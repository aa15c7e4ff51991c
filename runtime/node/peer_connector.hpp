// A connector dials one member (the lower id of every pair dials, so each pair
// shares one connection): asynchronous connect through the middleman actor
// (remote_actor() would block, forever on a frozen peer), a check that the
// published interface is a conclave gate, the membership handshake, then a
// monitor on the peer's candidate. Any failure, and any later drop of the
// connection, schedules a new attempt with exponential backoff
// (initial_backoff .. max_backoff), so a restarted peer is found again.
#pragma once

#include "runtime/node/node_config.hpp"
#include "runtime/node/peer_links.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>

namespace conclave::node {

struct connector_options {
  uint64_t peer = 0;
  address where;
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{100};
  /// Per step (connect, handshake): a frozen peer accepts TCP but never answers.
  std::chrono::milliseconds step_timeout{1000};
  /// Repair mode (peer_links::set_repair): dial a lower-id member once, retrying
  /// only until `repair_for` has passed; once linked, report the link's end and
  /// stop (the member's own connector stays responsible for reconnecting).
  bool repair = false;
  std::chrono::milliseconds repair_for{2000};
};

caf::actor spawn_connector(caf::actor_system& sys, std::shared_ptr<peer_links> links,
                           connector_options opts);

} // namespace conclave::node
