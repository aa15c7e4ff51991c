// How a candidate actor reaches the world: a transport to address peers by node
// id and to watch them, and a clock to read time and arm timers. Candidates never
// touch sockets or the wall clock themselves, so the same actor runs in-process,
// across processes (CAF middleman) and in the simulator (virtual network and time).
#pragma once

#include "actors/timer/host_clock.hpp"
#include "protocols/election/messages.hpp"

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

#include <optional>

namespace conclave::election {

class transport {
public:
  virtual ~transport() = default;

  /// Sends `m` from `self` to peer `to`. An unknown or unreachable peer: the
  /// message is dropped (the protocols retransmit or time out).
  virtual void send(caf::local_actor* self, node_id to, const message& m) = 0;

  /// Watches `peer`: when it goes down, `self` receives a caf::down_msg whose
  /// source node_of() maps to `peer`, or (peer_down_atom, peer).
  virtual void watch(caf::local_actor* self, node_id peer) = 0;

  /// The member behind an actor address (for down messages), if known.
  virtual std::optional<node_id> node_of(const caf::actor_addr& addr) const = 0;

  /// Whether a message naming `from` as its sender may be taken from the actor
  /// that sent it (`sender`, null for an anonymous message). Every election
  /// message carries `from` in its content; a transport that knows which actor
  /// speaks for which member refuses the others (the candidate drops the
  /// message and reports `unverified_sender`). Default: every message.
  virtual bool admits(const caf::strong_actor_ptr& /*sender*/, node_id /*from*/) const {
    return true;
  }
};

/// The candidate's clock: it reads time and arms its timer, (timer_atom,
/// generation), through it.
using election_clock = host_clock;

} // namespace conclave::election
