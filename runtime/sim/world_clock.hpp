// world_host_clock: a host's clock in the simulated world (world.hpp): the
// node's own clock (its rate error and offset), with timers in the world's
// queue for the host's port, so that they wait while the node is paused and
// die with it when it crashes.
#pragma once

#include "actors/timer/host_clock.hpp"
#include "runtime/sim/world.hpp"

namespace conclave::sim {

class world_host_clock final : public host_clock {
public:
  world_host_clock(world& w, node_id self, port_id port)
      : w_(w), self_(self), port_(port) {}
  timestamp now(caf::local_actor*) override { return w_.local_now(self_); }
  void send_later(caf::local_actor*, timestamp after, caf::message m) override {
    if (after < timestamp::zero())
      after = timestamp::zero();
    w_.schedule(self_, after, std::move(m), port_);
  }

private:
  world& w_;
  node_id self_;
  port_id port_;
};

/// The clock of every actor of one node that has a port of its own (the
/// workflow part's actors): the node's own clock, with each timer in the
/// world's queue for the port of the actor that arms it. A timer of an actor
/// that is not one of the node's (none in the node's composition) falls back
/// to CAF's clock.
class world_node_clock final : public host_clock {
public:
  world_node_clock(world& w, node_id self) : w_(w), self_(self) {}
  timestamp now(caf::local_actor*) override { return w_.local_now(self_); }
  void send_later(caf::local_actor* self, timestamp after, caf::message m) override {
    if (after < timestamp::zero())
      after = timestamp::zero();
    if (auto port = w_.port_of(self_, self->address())) {
      w_.schedule(self_, after, std::move(m), *port);
      return;
    }
    caf_host_clock{}.send_later(self, after, std::move(m));
  }

private:
  world& w_;
  node_id self_;
};

} // namespace conclave::sim
