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

/// A durable record of the longest lease this member may have promised, so
/// that a restarted candidate keeps a promise made before it stopped (see
/// candidate_core::use_promise_record and "Adaptive lease" in
/// docs/design/election.md). A candidate without one never promises more than
/// guard.lease. Written rarely: when round trips first need a longer lease,
/// and again 30 s after they no longer do.
class promise_record {
public:
  virtual ~promise_record() = default;

  /// What the record holds: 0 when nothing was recorded yet. A record that
  /// cannot be read must answer at least the longest lease any leader of the
  /// group may have been promised (guard.lease_max), and say why elsewhere.
  virtual duration load() = 0;

  /// Makes `value` durable before it returns; false if that failed (the
  /// record may then hold the old value or the new one).
  virtual bool store(duration value) = 0;
};

/// A record in memory that outlives the candidates of one member (the
/// simulator's: a completed write survives a crash of the node).
class memory_promise_record final : public promise_record {
public:
  duration load() override { return value_; }
  bool store(duration value) override {
    value_ = value;
    ++writes_;
    return true;
  }
  uint64_t writes() const { return writes_; }

private:
  duration value_{0};
  uint64_t writes_ = 0;
};

} // namespace conclave::election
