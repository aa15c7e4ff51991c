// host_clock: how an actor host reads time and arms timers. Every host (the
// election candidate, the replica host, ...) goes through it, so that one host
// runs in a process on CAF's clock and in the simulated world on its node's own
// drifting clock (runtime/sim/world_clock.hpp) without knowing which.
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/local_actor.hpp>
#include <caf/message.hpp>
#include <caf/send.hpp>

#include <chrono>

namespace conclave {

class host_clock {
public:
  using timestamp = std::chrono::nanoseconds;

  virtual ~host_clock() = default;

  /// The host's time since its clock's epoch.
  virtual timestamp now(caf::local_actor* self) = 0;

  /// Delivers `m` to `self` after `after` on this clock (an anonymous
  /// message; nothing if the actor is gone by then).
  virtual void send_later(caf::local_actor* self, timestamp after, caf::message m) = 0;
};

/// CAF's own clock: real time, or virtual time under the test coordinator.
class caf_host_clock final : public host_clock {
public:
  timestamp now(caf::local_actor* self) override {
    return std::chrono::duration_cast<timestamp>(self->clock().now().time_since_epoch());
  }
  void send_later(caf::local_actor* self, timestamp after, caf::message m) override {
    if (after < timestamp::zero())
      after = timestamp::zero();
    self->system().clock().schedule_message(
        self->clock().now() + std::chrono::duration_cast<caf::timespan>(after),
        caf::actor_cast<caf::strong_actor_ptr>(self),
        caf::make_mailbox_element(nullptr, caf::make_message_id(), {}, std::move(m)));
  }
};

/// `clock`'s time for `self`, or CAF's when there is no clock.
inline host_clock::timestamp clock_now(host_clock* clock, caf::local_actor* self) {
  if (clock)
    return clock->now(self);
  return std::chrono::duration_cast<host_clock::timestamp>(
      self->clock().now().time_since_epoch());
}

} // namespace conclave
